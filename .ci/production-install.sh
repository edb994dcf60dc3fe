# The Docker image's install and start, without a container engine: the files the Dockerfile
# COPYs (taken from this commit), its `npm ci --omit=dev`, then its CMD with its ENV
# (NODE_ENV=production) until /health answers 200 and / serves the dashboard (built as the image's
# dashboard stage builds it), then SIGTERM and a clean exit. Sourced by .ci/run.
check_production_install() {
  local dir files cmd port pid ok=""
  dir=$(mktemp -d /tmp/vigil-image-XXXXXX)
  # As root the embedded cluster runs as the postgres user. A private (0700) folder works too (Vigil
  # then keeps the cluster under /var/lib/vigil: test/operations/fresh-root.test.ts); an open one
  # keeps it in DATA_DIR, removed with the folder below.
  chmod 755 "$dir"
  # COPY <sources...> <dest> lines of the Dockerfile, and its CMD (a JSON array).
  files=$(node -e '
    const lines = require("fs").readFileSync("Dockerfile", "utf8").split("\n");
    const srcs = lines
      .filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))
      .flatMap((l) => l.trim().split(/\s+/).slice(1, -1));
    console.log(srcs.join(" "));')
  cmd=$(node -e '
    const l = require("fs").readFileSync("Dockerfile", "utf8").split("\n").find((l) => /^CMD\s/.test(l));
    console.log(JSON.parse(l.replace(/^CMD\s+/, "")).join("\n"));')
  # shellcheck disable=SC2086
  git archive HEAD $files | tar -x -C "$dir"
  (cd "$dir" && NODE_ENV=production npm ci --omit=dev --no-audit --no-fund --loglevel=error)
  # The image's dashboard stage (npm ci with dev dependencies, then npm run build:web): built here
  # with this checkout's dev dependencies, into the image's web/dist.
  npm run build:web --silent -- --outDir "$dir/web/dist" --emptyOutDir
  port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  mapfile -t argv <<<"$cmd"
  (cd "$dir" && NODE_ENV=production HOST=127.0.0.1 PORT="$port" METRICS_PORT=off DATA_DIR="$dir/data" exec "${argv[@]}" >"$dir/vigil.log" 2>&1) &
  pid=$!
  for _ in $(seq 1 120); do
    if node -e "fetch('http://127.0.0.1:$port/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"; then
      # ...and the dashboard: its page and the bundle it names.
      if node -e "
        const u = 'http://127.0.0.1:$port';
        fetch(u + '/').then(async (r) => {
          const html = await r.text();
          const js = /src=\"(\/assets\/[^\"]+)\"/.exec(html);
          if (!r.ok || !js) process.exit(1);
          const a = await fetch(u + js[1]);
          process.exit(a.ok ? 0 : 1);
        }, () => process.exit(1));"; then ok=1; else echo "the dashboard is not served (GET / or its bundle)" >&2; fi
      break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -TERM "$pid" 2>/dev/null || true
  local code=0
  wait "$pid" || code=$?
  if [[ -z "$ok" || "$code" != 0 ]]; then
    tail -n 30 "$dir/vigil.log" >&2
    echo "the production install (npm ci --omit=dev, then the Dockerfile's CMD) did not serve /health and the dashboard (exit $code)" >&2
    rm -rf "$dir"
    return 1
  fi
  echo "production install served /health and the dashboard, and stopped cleanly"
  rm -rf "$dir"
}
