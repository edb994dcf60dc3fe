import type { DescField, DescMethod } from "@bufbuild/protobuf";
import { isStreaming, type ServiceBinding } from "../shared/feature.js";
import { routesFor, type Route } from "../transcoding/routes.js";
import type { CallerKind, RpcFacts } from "./access.js";
import type { Describe } from "./comments.js";
import { alsoRefusedOf, applyRule, ruleOnField, ruleSchema } from "./rules.js";
import {
  fieldSchema,
  messageRef,
  messageSchema,
  scalarSchema,
  storable,
  type Schema,
  type SchemaContext,
} from "./schema.js";

// The OpenAPI 3.1 document of the REST face, built from the very route table the transcoder
// serves (routesFor over the served bindings), the RPCs' messages and options, the callers and
// rate limits derived from the handlers (access.ts), and the proto comments.

export interface DocumentInput {
  bindings: ServiceBinding[];
  facts: Map<string, RpcFacts>;
  describe: Describe;
  version: string;
  /** package.json's `license` (`UNLICENSED`: private, no licence granted) and `author`. */
  license: string;
  author: string;
}

const ERROR_CODE_PATTERN = "^[a-z][a-z0-9_]*$";

const INTRO = `The REST/JSON face of Vigil. Every operation is also a gRPC / Connect / gRPC-web RPC of package
\`vigil.v1\` on the same port (its name is given with each operation); this document is generated from
the protos in \`proto/\` and the code that serves them (\`npm run generate\`).

**Shapes.** A response carries its result in \`data\` (lists also \`pagination\` or \`meta\` where the
operation says so). Every field is always present: an unset optional value or object is \`null\`,
lists are \`[]\`. Names are lowerCamel. 64-bit integers are plain JSON numbers (exact up to 2^53).
Timestamps are ISO 8601 strings in UTC.

**Requests.** \`POST\`/\`PATCH\` bodies are JSON (\`Content-Type: application/json\`, also when empty);
a key that is no field of the body (at any depth, a field given by the path too) is a 400
\`validation_failed\` naming it, and so is a value of the wrong type. Such routes take no query
parameters.

**Errors.** Every error is \`{"error": {"code", "message", "details?"}}\` with a snake_case \`code\`.
Each operation lists the statuses its route answers from the rules that guard it (credentials, roles,
body, rate limits); \`default\` covers the rest (409 conflicts, 503 \`query_timeout\`, 500 \`internal\`).

**Authentication.** A project API key (\`Authorization: Bearer vk_...\`) or the \`vigil_session\`
cookie set by sign-up and login; each operation says which. Cookie-authenticated writes must come from
the same origin (403 otherwise). A publishable key (\`vk_pub_...\`, for web pages) may only ingest
events (\`POST /v1/events\`, \`POST /v1/events/batch\`): every other operation answers it 403. A ping key
(\`vk_ping_...\`, for cron jobs) may only send heartbeats (the operations whose auth names ping keys, and the
ping URLs \`/ping/{pingKey}/{monitorSlug}\`, which take it in the path): every other operation answers it 403.`;

const CALLER_TEXT: Record<CallerKind, string> = {
  public: "No credentials.",
  data: "A secret project API key, or the session of any member of the project (publishable keys: 403).",
  heartbeat:
    "A secret or ping project API key (`vk_ping_...`: heartbeats only), or the session of any member of the project (publishable keys: 403).",
  member: "The session of a member of the project (any role); API keys are refused (403).",
  admin: "The session of an admin or owner of the project; API keys are refused (403).",
  owner: "The session of the project's owner; API keys are refused (403).",
  session: "A signed-in session (the `vigil_session` cookie); API keys are refused.",
  apiKey:
    "A project API key, secret or publishable (`Authorization: Bearer vk_...`); the project is the key's own. For browsers: CORS, `text/plain` bodies with `?key=vk_pub_...` (sendBeacon), `Content-Encoding: gzip` (docs/clients.md).",
  pingKey:
    "A ping key of the project (`vk_ping_...`) in the path, no header (a URL for curl in a crontab): unknown or revoked, 401; a key of another kind, 403. The path is logged with the key redacted.",
  credentials: "A project API key or a signed-in session.",
};

function security(caller: CallerKind): Record<string, string[]>[] {
  // A ping URL's key is a path parameter: no security scheme carries it.
  if (caller === "public" || caller === "pingKey") return [];
  if (caller === "apiKey") return [{ apiKey: [] }];
  if (caller === "data" || caller === "heartbeat" || caller === "credentials") return [{ apiKey: [] }, { session: [] }];
  return [{ session: [] }];
}

const ERRORS: Record<string, string> = {
  "400":
    "Malformed JSON, a value of the wrong type, or failed validation (`details` names the fields: `[{field, message}]`).",
  "401": "Missing, malformed, unknown or revoked credentials.",
  "403":
    "Valid credentials without the right to this route (wrong kind of credentials, too low a role), or a cookie-authenticated write from another origin.",
  "404": "No such resource, or a project the caller cannot see.",
  "413": "The body (or a batch) is over its limit.",
  "415":
    "The body is not JSON (`Content-Type: application/json` is required, also for an empty body), or has a `Content-Encoding` the route does not take (gzip: ingestion routes only).",
  "429": "Rate limited; `Retry-After` says when to try again (`details.retryAfterSeconds` too).",
  default:
    "Any other error, in the same body, decided by the operation itself: e.g. 401 `invalid_credentials` (login), 403 (sign-up closed), 409 `conflict`, 503 `query_timeout` or `unavailable`, 500 `internal`.",
};

const isWrite = (verb: string) => verb !== "GET" && verb !== "HEAD" && verb !== "OPTIONS" && verb !== "DELETE";

function errorStatuses(route: Route, facts: RpcFacts): string[] {
  const s = ["400"];
  if (facts.caller !== "public") s.push("401");
  if (!["public", "data", "heartbeat", "credentials"].includes(facts.caller) || route.verb !== "GET") s.push("403");
  if (route.segments.some((x) => "variable" in x)) s.push("404");
  if (isWrite(route.verb)) s.push("413", "415");
  if (facts.rateLimits.length) s.push("429");
  return s;
}

const pathOf = (route: Route, field: (name: string) => DescField) =>
  "/" + route.segments.map((x) => ("literal" in x ? x.literal : `{${field(x.variable).jsonName}}`)).join("/");

function queryParameters(method: DescMethod, omit: Set<string>, ctx: SchemaContext, rule?: Schema): Schema[] {
  const out: Schema[] = [];
  for (const f of method.input.fields) {
    if (omit.has(f.name)) continue;
    const scalar = f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar");
    if (!scalar) continue; // messages and maps cannot be written in a query string
    // A query parameter is absent or a value: never null. Lists repeat the name (`?x=a&x=b`).
    let schema =
      f.fieldKind === "list"
        ? { type: "array", items: storable(scalarSchema(f.scalar!)) }
        : storable(scalarSchema(f.scalar!));
    const fieldRule = (rule?.properties as Record<string, Schema> | undefined)?.[f.jsonName];
    const required = ((rule?.required ?? []) as string[]).includes(f.jsonName);
    if (fieldRule) schema = ruleOnField(schema, fieldRule, required);
    const description = ctx.describe(`${method.input.typeName}.${f.name}`);
    out.push({ name: f.jsonName, in: "query", required, schema, ...(description ? { description } : {}) });
  }
  return out;
}

function operation(route: Route, binding: ServiceBinding, facts: RpcFacts, ctx: SchemaContext): Schema {
  const { method, service } = route;
  const field = (name: string) => method.input.fields.find((f) => f.name === name)!;
  const pathFields = new Set(route.segments.flatMap((x) => ("variable" in x ? [x.variable] : [])));
  // The handler's zod rule (bind's `rules`), laid over the proto-derived input.
  const zodRule = binding.rules?.[method.localName];
  const rule = zodRule ? ruleSchema(zodRule) : undefined;
  const parameters: Schema[] = [...pathFields].map((name) => {
    const f = field(name);
    const description = ctx.describe(`${method.input.typeName}.${f.name}`);
    const fieldRule = (rule?.properties as Record<string, Schema> | undefined)?.[f.jsonName];
    const schema = storable({ type: "string", minLength: 1 });
    return {
      name: f.jsonName,
      in: "path",
      required: true,
      schema: fieldRule ? ruleOnField(schema, fieldRule, true) : schema,
      ...(description ? { description } : {}),
    };
  });
  const resolve = (ref: string) => ctx.schemas[ref.slice("#/components/schemas/".length)];
  let requestBody: Schema | undefined;
  // A body route refuses a request without a JSON body (415), even when every field is optional.
  if (route.body === "*") {
    const schema = messageSchema(method.input, "input", ctx, pathFields);
    requestBody = {
      required: true,
      content: { "application/json": { schema: rule ? applyRule(schema, rule, resolve) : schema } },
    };
  } else if (route.body) {
    requestBody = {
      required: true,
      content: { "application/json": { schema: fieldSchema(field(route.body), "input", ctx) } },
    };
    parameters.push(...queryParameters(method, new Set([...pathFields, route.body]), ctx, rule));
  } else {
    parameters.push(...queryParameters(method, pathFields, ctx, rule));
  }
  const rpc = `${service.typeName}/${method.name}`;
  const also = rule ? alsoRefusedOf(rule) : [];
  const bodySchema = (requestBody?.content as Record<string, Schema> | undefined)?.["application/json"]?.schema;
  if (bodySchema && hasFreeJson(bodySchema as Schema, resolve)) also.push(FREE_JSON_REFUSED);
  const lines = [
    ctx.describe(`${service.typeName}.${method.name}`),
    `**Auth:** ${CALLER_TEXT[facts.caller]}`,
    facts.rateLimits.length
      ? `**Rate limit:** counts against \`${facts.rateLimits.join("`, `")}\` (429 with \`Retry-After\` when over it).`
      : undefined,
    also.length ? `**Also refused (400), beyond what the schemas say:** ${also.join("; ")}.` : undefined,
    `**gRPC:** \`${rpc}\``,
  ];
  const success = String(route.successStatus);
  const streamTypes = isStreaming(method) ? (binding.streamContentTypes?.[method.localName] ?? []) : undefined;
  const responses: Record<string, Schema> = {
    [success]: streamTypes
      ? {
          // An HttpBody stream: the body is the file itself, of the types its binding declares.
          description:
            "The file, streamed (chunked). An error before its first byte is the JSON error below; a failure after it cuts the transfer.",
          content: Object.fromEntries(streamTypes.map((t) => [t, { schema: { type: "string" } }])),
        }
      : route.successStatus === 204
        ? { description: "Done; no body." }
        : {
            description: "Success.",
            content: { "application/json": { schema: messageRef(method.output, "output", ctx) } },
          },
  };
  for (const s of errorStatuses(route, facts)) responses[s] = { $ref: `#/components/responses/Error${s}` };
  responses.default = { $ref: "#/components/responses/ErrorDefault" };
  return {
    operationId: method.name,
    tags: [tagOf(service.name)],
    summary: method.name.replace(/([a-z])([A-Z])/g, "$1 $2"),
    description: lines.filter(Boolean).join("\n\n"),
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
    security: security(facts.caller),
    "x-vigil-caller": facts.caller,
    ...(facts.rateLimits.length ? { "x-vigil-rate-limits": facts.rateLimits } : {}),
    ...(also.length ? { "x-vigil-also-refused": also } : {}),
    "x-grpc-method": `/${rpc}`,
  };
}

const tagOf = (serviceName: string) => serviceName.replace(/Service$/, "");

export function buildDocument(input: DocumentInput): Schema {
  const schemas: Record<string, Schema> = {};
  const ctx: SchemaContext = { schemas, describe: input.describe };
  const routes = routesFor(input.bindings.map((b) => b.desc));
  // Proto order (service, then method), not the matcher's literal-first order.
  const order = new Map(input.bindings.flatMap((b) => b.desc.methods).map((m, i) => [m, i]));
  routes.sort((a, b) => order.get(a.method)! - order.get(b.method)!);
  const paths: Record<string, Record<string, Schema>> = {};
  const operationIds = new Set<string>();
  for (const route of routes) {
    const facts = input.facts.get(`${route.service.typeName}/${route.method.name}`);
    if (!facts) throw new Error(`no implementation found for ${route.service.typeName}/${route.method.name}`);
    const p = pathOf(route, (name) => route.method.input.fields.find((f) => f.name === name)!);
    const binding = input.bindings.find((b) => b.desc === route.service)!;
    const op = operation(route, binding, facts, ctx);
    // An RPC's second binding (additional_bindings: another verb) is `<Method><Verb>`; a method
    // name that another service uses too is `<Service><Method>`.
    const again = routes.some(
      (r) => r !== route && r.method === route.method && routes.indexOf(r) < routes.indexOf(route),
    );
    if (again) op.operationId = `${route.method.name}${route.verb[0]}${route.verb.slice(1).toLowerCase()}`;
    else if (operationIds.has(op.operationId as string))
      op.operationId = `${tagOf(route.service.name)}${route.method.name}`;
    operationIds.add(op.operationId as string);
    (paths[p] ??= {})[route.verb.toLowerCase()] = op;
  }
  addLinks(paths, schemas);
  const tags = input.bindings
    .filter((b) => b.desc.methods.some((m) => routes.some((r) => r.method === m)))
    .map((b) => ({
      name: tagOf(b.desc.name),
      ...(input.describe(b.desc.typeName) ? { description: input.describe(b.desc.typeName) } : {}),
    }));
  const errorSchema: Schema = {
    type: "object",
    required: ["error"],
    additionalProperties: false,
    properties: {
      error: {
        type: "object",
        required: ["code", "message"],
        additionalProperties: false,
        properties: {
          code: {
            type: "string",
            pattern: ERROR_CODE_PATTERN,
            description:
              "snake_case, stable: validation_failed, invalid_json, unauthenticated, forbidden, not_found, conflict, payload_too_large, unsupported_media_type, rate_limited, ...",
          },
          message: { type: "string", description: "Human-readable; may change." },
          details: {
            description: "Optional. Validation errors: `[{field, message}]`; rate limits: `{retryAfterSeconds}`.",
          },
        },
      },
    },
  };
  const responses: Record<string, Schema> = {};
  for (const [status, description] of Object.entries(ERRORS)) {
    const name = status === "default" ? "ErrorDefault" : `Error${status}`;
    responses[name] = {
      description,
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
    };
    if (status === "429")
      responses[name].headers = {
        "Retry-After": { description: "Seconds to wait.", schema: { type: "integer", minimum: 1 } },
      };
  }
  const document: Schema = {
    openapi: "3.1.0",
    info: {
      title: "Vigil API",
      version: input.version,
      description: INTRO,
      // An SPDX identifier; package.json's UNLICENSED (private) is a LicenseRef of that name.
      license: { name: input.license, identifier: `LicenseRef-${input.license}` },
      contact: { name: input.author },
    },
    servers: [{ url: "/" }],
    tags,
    paths,
    components: {
      schemas: { Error: errorSchema, ...sortKeys(schemas) },
      responses,
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "vk_...",
          description:
            "A project API key: `Authorization: Bearer vk_...` (created under a project's API keys). Publishable keys (`vk_pub_...`) may only ingest events.",
        },
        session: {
          type: "apiKey",
          in: "cookie",
          name: "vigil_session",
          description: "The signed session cookie set by sign-up and login (`HttpOnly`, `SameSite=Lax`).",
        },
      },
    },
  };
  pruneSchemas(document);
  return document;
}

/** What the storable-text check refuses inside free-form JSON, where JSON Schema patterns do not reach. */
const FREE_JSON_REFUSED =
  "a NUL character (U+0000) or a lone UTF-16 surrogate in a string or key inside free-form JSON";

/** Whether a request schema holds free-form JSON (Struct, Value, ListValue items, batch items) at any depth. */
function hasFreeJson(schema: Schema, resolve: (ref: string) => Schema): boolean {
  const seen = new Set<Schema>();
  const walk = (s: unknown): boolean => {
    if (!s || typeof s !== "object" || seen.has(s as Schema)) return false;
    const x = s as Schema;
    seen.add(x);
    if (x.$ref) return walk(resolve(x.$ref as string));
    if (x.additionalProperties === true) return true;
    if (x.type === undefined && !x.anyOf && !x.enum && x.const === undefined) return true;
    const parts = [
      ...Object.values((x.properties ?? {}) as Record<string, Schema>),
      ...((x.anyOf ?? []) as Schema[]),
      ...(x.items ? [x.items] : []),
      ...(typeof x.additionalProperties === "object" ? [x.additionalProperties] : []),
    ];
    return parts.some(walk);
  };
  return walk(schema);
}

const PARAM = /^\{(.+)\}$/;

/**
 * OpenAPI `links` from each create to what it created: a POST on `P` whose success answers
 * `data.id` links to every operation under `P/{x}` (x: a path parameter `P` does not have), with `x`
 * the created id and `P`'s own parameters those of the create request. Derived from the paths, so a
 * new resource gets its links (stateful tools such as schemathesis follow them: create, then
 * read, update, delete what was created).
 */
function addLinks(paths: Record<string, Record<string, Schema>>, schemas: Record<string, Schema>): void {
  const deref = (s: Schema | undefined): Schema | undefined =>
    s?.$ref ? schemas[(s.$ref as string).slice("#/components/schemas/".length)] : s;
  const dataOf = (s: Schema | undefined): Schema | undefined => {
    const d = deref(s)?.properties as Record<string, Schema> | undefined;
    const data = d?.data;
    if (!data) return undefined;
    return deref(data.$ref ? data : ((data.anyOf as Schema[] | undefined)?.find((x) => x.$ref) ?? data));
  };
  for (const [path, ops] of Object.entries(paths)) {
    const create = ops.post;
    if (!create) continue;
    const success = Object.entries(create.responses as Record<string, Schema>).find(([s]) => s < "3")![1];
    const content = success.content as Record<string, Schema> | undefined;
    const data = dataOf(content?.["application/json"]?.schema as Schema | undefined);
    if (!(data?.properties as Record<string, Schema> | undefined)?.id) continue;
    const own = path.split("/").flatMap((seg) => (PARAM.test(seg) ? [seg.slice(1, -1)] : []));
    const links: Record<string, Schema> = {};
    for (const [target, targetOps] of Object.entries(paths)) {
      if (!target.startsWith(path + "/")) continue;
      const created = PARAM.exec(target.slice(path.length + 1).split("/")[0])?.[1];
      if (!created || own.includes(created)) continue;
      for (const op of Object.values(targetOps)) {
        const parameters: Record<string, string> = { [created]: "$response.body#/data/id" };
        for (const p of own) parameters[p] = `$request.path.${p}`;
        links[op.operationId as string] = {
          operationId: op.operationId,
          parameters,
          description: `The ${created} this create answered.`,
        };
      }
    }
    if (Object.keys(links).length) success.links = links;
  }
}

/**
 * Drops the components no operation reaches (a message whose only use was inlined with the rules
 * of its handler, src/openapi/rules.ts): linters flag unused components.
 */
function pruneSchemas(document: Schema): void {
  const components = document.components as { schemas: Record<string, Schema> };
  const reached = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        if (k === "$ref" && typeof x === "string" && x.startsWith("#/components/schemas/")) {
          const name = x.slice("#/components/schemas/".length);
          if (!reached.has(name)) {
            reached.add(name);
            walk(components.schemas[name]);
          }
        } else walk(x);
      }
    }
  };
  walk(document.paths);
  walk((document.components as Schema).responses);
  for (const name of Object.keys(components.schemas)) if (!reached.has(name)) delete components.schemas[name];
}

function sortKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
