import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { getOption, hasOption } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import { http_success_status } from "../../gen/vigil/v1/options_pb.js";

// Builds the REST route table from each RPC's google.api.http rule: adding an RPC with a
// rule adds its route. Templates support literal segments and `{field}` variables.

type Segment = { literal: string } | { variable: string };

export interface Route {
  verb: string;
  template: string;
  segments: Segment[];
  body: string; // "" (no body), "*" (whole body), or a field name
  successStatus: number;
  service: DescService;
  method: DescMethod;
}

function parseTemplate(template: string): Segment[] {
  if (!template.startsWith("/")) throw new Error(`http rule path must start with '/': ${template}`);
  return template
    .slice(1)
    .split("/")
    .map((part) => {
      const m = /^\{([a-z_][a-z0-9_]*)(?:=\*)?\}$/.exec(part);
      if (m) return { variable: m[1] };
      if (part.includes("{") || part.includes("*"))
        throw new Error(`unsupported http template segment '${part}' in ${template}`);
      return { literal: part };
    });
}

export function routesFor(services: DescService[]): Route[] {
  const routes: Route[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      const rule = getOption(method, http);
      const bindings = [rule, ...rule.additionalBindings];
      for (const b of bindings) {
        const p = b.pattern;
        if (!p.case) continue;
        const verb = p.case === "custom" ? p.value.kind.toUpperCase() : p.case.toUpperCase();
        const template = p.case === "custom" ? p.value.path : p.value;
        const segments = parseTemplate(template);
        for (const s of segments) {
          if ("variable" in s && !method.input.fields.some((f) => f.name === s.variable)) {
            throw new Error(`${method.name}: path variable {${s.variable}} is not a field of ${method.input.typeName}`);
          }
        }
        routes.push({
          verb,
          template,
          segments,
          body: b.body,
          successStatus: hasOption(method, http_success_status) ? getOption(method, http_success_status) : 200,
          service,
          method,
        });
      }
    }
  }
  // Literal segments win over variables (`/monitors/overview` before `/monitors/{monitor_id}`).
  const score = (r: Route) => r.segments.map((s) => ("literal" in s ? "1" : "0")).join("");
  routes.sort((a, b) => (score(a) < score(b) ? 1 : score(a) > score(b) ? -1 : 0));
  return routes;
}

export interface Match {
  route: Route;
  params: Record<string, string>;
}

/** Finds the route for a path. `pathMatched` tells a 404 (no such path) from a wrong verb. */
const bySegmentCount = new WeakMap<Route[], Map<number, Route[]>>();

function candidates(routes: Route[], n: number): Route[] {
  let index = bySegmentCount.get(routes);
  if (!index) {
    index = new Map();
    for (const r of routes) {
      const list = index.get(r.segments.length) ?? [];
      list.push(r); // keeps the literal-first order of `routes`
      index.set(r.segments.length, list);
    }
    bySegmentCount.set(routes, index);
  }
  return index.get(n) ?? [];
}

export function matchRoute(routes: Route[], verb: string, pathname: string): { match?: Match; pathMatched: boolean } {
  const parts = pathname.replace(/\/+$/, "").slice(1).split("/");
  let pathMatched = false;
  for (const route of candidates(routes, parts.length)) {
    // Literal segments first (plain string compares); variables are decoded only for a route whose
    // literals all matched.
    if (!literalsMatch(route.segments, parts)) continue;
    const params = variables(route.segments, parts);
    if (!params) continue;
    pathMatched = true;
    if (route.verb === verb) return { match: { route, params }, pathMatched };
  }
  return { pathMatched };
}

function literalsMatch(segments: Segment[], parts: string[]): boolean {
  for (let i = 0; i < parts.length; i++) {
    const seg = segments[i];
    if ("literal" in seg && seg.literal !== parts[i]) return false;
  }
  return true;
}

/** The decoded path variables; undefined when one is empty or not valid percent-encoding. */
function variables(segments: Segment[], parts: string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const seg = segments[i];
    if ("literal" in seg) continue;
    let v = parts[i];
    if (v.includes("%")) {
      try {
        v = decodeURIComponent(v);
      } catch {
        return undefined;
      }
    }
    if (v.length === 0) return undefined;
    params[seg.variable] = v;
  }
  return params;
}
