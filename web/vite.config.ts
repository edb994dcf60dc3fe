import path from "node:path";
import { defineConfig } from "vite";
import preact from "@preact/preset-vite";

// The dashboard's build (docs/dashboard.md): `npm run build:web` writes web/dist, which Vigil
// serves (src/server/dashboard.ts). `npx vite web` serves it with hot reload and forwards the API
// to a Vigil on :3000 (VIGIL_URL to change it).
const api = process.env.VIGIL_URL ?? "http://127.0.0.1:3000";

export default defineConfig({
  root: import.meta.dirname,
  plugins: [preact()],
  resolve: {
    // The protovalidate rules in the descriptors are for gRPC clients; see src/validate-stub.ts.
    alias: [
      {
        find: /^.*\/buf\/validate\/validate_pb\.js$/,
        replacement: path.join(import.meta.dirname, "src/validate-stub.ts"),
      },
    ],
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // No inline scripts or styles: the page's CSP allows only 'self'.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 400,
  },
  server: {
    proxy: {
      "/v1": api,
      "/vigil.v1.": api,
      "/status": api,
      "/docs": api,
    },
  },
});
