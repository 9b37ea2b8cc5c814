# Production image for the api and worker processes (see docker-compose.yml).
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
COPY shared ./shared
COPY cli ./cli
COPY bin ./bin
USER node
EXPOSE 8080 8081
CMD ["node", "bin/api.ts"]
