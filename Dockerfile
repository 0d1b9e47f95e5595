# Sluice gateway.
#   docker build -t sluice .
#   docker run -p 3000:3000 -v sluice-data:/app/data sluice                       (embedded PGlite on the volume)
#   docker run -p 3000:3000 -e DATABASE_URL=postgres://… -e REDIS_URL=redis://… sluice   (PostgreSQL, no volume needed)
# The image's `deno` user (uid 1993) owns /app and DENO_DIR (/deno-dir); nothing runs as root after the first RUN.
FROM denoland/deno:2.9.6
WORKDIR /app
RUN chown deno:deno /app
USER deno
COPY --chown=deno:deno deno.json deno.lock ./
RUN deno install --frozen
# Only what the gateway runs: its sources, its migrations and the console's built page (no tests, benchmarks,
# emulator or console sources).
COPY --chown=deno:deno src ./src
COPY --chown=deno:deno migrations ./migrations
COPY --chown=deno:deno console/index.html console/app.css ./console/
COPY --chown=deno:deno console/dist ./console/dist
RUN deno cache src/main.ts && mkdir -p /app/data
ENV PORT=3000 HOST=0.0.0.0 SLUICE_DATA_DIR=/app/data LOG_FORMAT=json
VOLUME /app/data
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
  CMD ["deno", "eval", "const r = await fetch(`http://127.0.0.1:${Deno.env.get('PORT')}/healthz`); Deno.exit(r.ok ? 0 : 1)"]
CMD ["deno", "task", "start"]
