# Vigil: one image for API nodes (ROLE=api), workers (ROLE=worker) or both (ROLE=all).

# The dashboard (web/, docs/dashboard.md) is built here, with the dev dependencies (Vite, Preact),
# and only its output goes into the image.
FROM node:20-bookworm-slim AS dashboard
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY gen ./gen
COPY web ./web
RUN npm run build:web

FROM node:20-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json ./
COPY proto ./proto
COPY gen ./gen
COPY src ./src
COPY workflows ./workflows
COPY --from=dashboard /app/web/dist ./web/dist

# Listen on every interface inside the container; data for the embedded default goes to /data.
ENV HOST=0.0.0.0 PORT=3000 DATA_DIR=/data
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 3000

HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"

# The same command as `npm start` (a larger young generation: see docs/operations.md).
CMD ["node", "--max-semi-space-size=64", "--import", "tsx", "src/main.ts"]
