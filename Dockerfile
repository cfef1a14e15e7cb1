# One image for every Userland component; the chart picks the component with the command's argument:
#   node operator/main.ts | services/auth/main.ts | services/proxy/main.ts | services/user-manager/main.ts
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.
#
#   docker build -t registry.example.org/userland:0.1.0 .

# --- dependencies: production packages only, from the lock file ---------------------------------------
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: no production dependency needs one, and none gets to run code at build time.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------------------
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
# Owned by root and not writable by the runtime user: the code cannot be changed from inside.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./package.json
COPY api ./api
COPY coursework ./coursework
COPY lib ./lib
COPY operator ./operator
COPY services ./services
COPY scripts ./scripts
# Non-root, by number so Kubernetes' runAsNonRoot can verify it (the chart sets the same id).
USER 10001:10001
ENTRYPOINT ["node"]
CMD ["operator/main.ts"]
