# Sluice gateway. Build: docker build -t sluice .   Run: docker run -p 3000:3000 -v sluice-data:/app/data sluice
FROM denoland/deno:2.9.6
WORKDIR /app
COPY deno.json deno.lock ./
RUN deno install --frozen
COPY . .
RUN deno cache src/main.ts && mkdir -p /app/data && chown -R deno:deno /app
ENV PORT=3000 HOST=0.0.0.0 SLUICE_DATA_DIR=/app/data
EXPOSE 3000
USER deno
CMD ["deno", "task", "start"]
