# Production image for the api and worker processes (see docker-compose.yml).
# The browser console is built in its own stage (esbuild, Preact and htm are build-time dependencies).
FROM node:24-bookworm-slim AS console
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY api/console ./api/console
RUN node api/console/build.ts

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# Dev dependencies (node@24, TypeScript, test tools) are not needed: the base image is Node 24, which
# runs the TypeScript sources directly (type stripping).
RUN npm ci --omit=dev --no-audit --no-fund
COPY api ./api
COPY activities ./activities
COPY workflows ./workflows
COPY core ./core
COPY platform ./platform
COPY temporal ./temporal
COPY runners ./runners
COPY cli ./cli
COPY bin ./bin
COPY --from=console /app/api/console/dist ./api/console/dist
USER node
EXPOSE 8080 8081
CMD ["node", "bin/api.ts"]
