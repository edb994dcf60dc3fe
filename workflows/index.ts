// Every Temporal workflow of the service (the worker bundles this file). A feature adds its line.
export * from "./uptime.js";
export * from "./webhooks.js";
