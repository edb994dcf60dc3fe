// Every Temporal workflow of the service (the worker bundles this file). A feature adds its line.
export { deadlineScanWorkflow } from "./deadlines.js";
export { monitorDeadlineWorkflow } from "./uptime.js";
export { webhookDeliveryWorkflow } from "./webhooks.js";
