import type { ComponentChildren, FunctionComponent } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ErrorBoundary, LocationProvider, Route, Router, useLocation, useRoute } from "preact-iso";
import { api } from "./api.js";
import { SECTIONS } from "./sections.js";
import { ProjectContext, SessionProvider, useSession, type Role } from "./session.js";
import { useAsync } from "./ui/hooks.js";
import { ErrorMessage, Loading } from "./ui/kit.js";
import { Login, Signup } from "./screens/auth.js";
import { ProjectList } from "./screens/projects.js";
import { Settings } from "./screens/settings.js";
import { Keys } from "./screens/keys.js";
import { Members } from "./screens/members.js";
import { Events } from "./screens/events.js";
import { Analytics } from "./screens/analytics.js";
import { Metrics } from "./screens/metrics.js";
import { Uptime, MonitorDetail } from "./screens/uptime.js";
import { MaintenanceCalendar } from "./screens/uptime-maintenance.js";
import { Alerts, AlertDetail } from "./screens/alerts.js";
import { Webhooks, WebhookDetail } from "./screens/webhooks.js";
import { StatusPages } from "./screens/pages.js";
import { Users, UserDetail } from "./screens/users.js";

// The application: routes (the same paths Vigil answers with index.html, src/server/dashboard.ts),
// the signed-in shell and the project sections. Each screen lives in screens/<name>.tsx.

export function App() {
  return (
    <LocationProvider>
      <SessionProvider>
        <ErrorBoundary>
          <Router>
            <Route path="/login" component={Login} />
            <Route path="/signup" component={Signup} />
            <Route
              path="/"
              component={() => (
                <SignedIn>
                  <Redirect to="/projects" />
                </SignedIn>
              )}
            />
            <Route
              path="/projects"
              component={() => (
                <SignedIn>
                  <ProjectList />
                </SignedIn>
              )}
            />
            <Route
              path="/projects/:projectId"
              component={() => <InProject screen={() => <Redirect to="events" relative />} />}
            />
            <Route path="/projects/:projectId/events" component={() => <InProject screen={Events} />} />
            <Route path="/projects/:projectId/analytics" component={() => <InProject screen={Analytics} />} />
            <Route path="/projects/:projectId/metrics" component={() => <InProject screen={Metrics} />} />
            <Route path="/projects/:projectId/uptime" component={() => <InProject screen={Uptime} />} />
            {/* Before :monitorId, which would take "maintenance" as a monitor's id. */}
            <Route
              path="/projects/:projectId/uptime/maintenance"
              component={() => <InProject screen={MaintenanceCalendar} />}
            />
            <Route
              path="/projects/:projectId/uptime/:monitorId"
              component={() => <InProject screen={MonitorDetail} />}
            />
            <Route path="/projects/:projectId/alerts" component={() => <InProject screen={Alerts} />} />
            <Route path="/projects/:projectId/alerts/:alertId" component={() => <InProject screen={AlertDetail} />} />
            <Route path="/projects/:projectId/webhooks" component={() => <InProject screen={Webhooks} />} />
            <Route
              path="/projects/:projectId/webhooks/:webhookId"
              component={() => <InProject screen={WebhookDetail} />}
            />
            <Route path="/projects/:projectId/pages" component={() => <InProject screen={StatusPages} />} />
            <Route path="/projects/:projectId/users" component={() => <InProject screen={Users} />} />
            <Route path="/projects/:projectId/users/:userId" component={() => <InProject screen={UserDetail} />} />
            <Route path="/projects/:projectId/keys" component={() => <InProject screen={Keys} />} />
            <Route path="/projects/:projectId/members" component={() => <InProject screen={Members} />} />
            <Route path="/projects/:projectId/settings" component={() => <InProject screen={Settings} />} />
            <Route default component={NotFound} />
          </Router>
        </ErrorBoundary>
      </SessionProvider>
    </LocationProvider>
  );
}

function Redirect({ to, relative }: { to: string; relative?: boolean }) {
  const loc = useLocation();
  useEffect(() => loc.route(relative ? `${loc.path.replace(/\/$/, "")}/${to}` : to, true), [to]);
  return null;
}

/** The signed-in account (undefined while Me runs); anyone signed out is sent to sign in, and back. */
function useSignedIn() {
  const { account } = useSession();
  const loc = useLocation();
  useEffect(() => {
    if (account === null) loc.route(`/login?next=${encodeURIComponent(loc.url)}`, true);
  }, [account]);
  return account;
}

/** Renders its children for a signed-in person. */
function SignedIn({ children }: { children: ComponentChildren }) {
  const account = useSignedIn();
  if (!account) return <Loading />;
  return <Shell>{children}</Shell>;
}

function Shell({
  children,
  projectId,
  projectName,
}: {
  children: ComponentChildren;
  projectId?: string;
  projectName?: string;
}) {
  const { account, setAccount } = useSession();
  const loc = useLocation();
  return (
    <div class="layout">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <a class="brand" href="/projects">
          <img src="/favicon.svg" alt="" width="22" height="22" /> Vigil
        </a>
        {projectId && <ProjectSwitcher projectId={projectId} projectName={projectName} />}
        <div class="spacer" />
        <span class="muted account">{account?.email}</span>
        <button
          type="button"
          class="btn btn-link"
          onClick={async () => {
            await api.auth.logout({}).catch(() => undefined);
            setAccount(null);
            loc.route("/login", true);
          }}
        >
          Sign out
        </button>
      </header>
      {projectId && (
        <nav class="sidebar" aria-label="Project">
          <ul>
            {SECTIONS.map(([path, label]) => {
              const href = `/projects/${projectId}/${path}`;
              const current = loc.path === href || loc.path.startsWith(`${href}/`);
              return (
                <li key={path}>
                  <a href={href} aria-current={current ? "page" : undefined}>
                    {label}
                  </a>
                </li>
              );
            })}
          </ul>
        </nav>
      )}
      <main id="main" tabIndex={-1} class={projectId ? "with-sidebar" : undefined}>
        {children}
      </main>
    </div>
  );
}

/** The signed-in person's projects; listed again when the current one is renamed. */
function ProjectSwitcher({ projectId, projectName }: { projectId: string; projectName?: string }) {
  const loc = useLocation();
  // Listed again when the shown name changes (a rename), not when it first arrives: that second
  // request ran beside every screen's first one.
  const names = useRef({ last: projectName, changes: 0 });
  if (projectName !== undefined && projectName !== names.current.last) {
    if (names.current.last !== undefined) names.current.changes++;
    names.current.last = projectName;
  }
  const projects = useAsync(() => api.projects.listProjects({}).then((r) => r.data), [names.current.changes]);
  const section = loc.path.split("/")[3] ?? "events";
  return (
    <label class="switcher">
      <span class="visually-hidden">Project</span>
      <select
        value={projectId}
        onChange={(e) => loc.route(`/projects/${(e.target as HTMLSelectElement).value}/${section}`)}
      >
        {(projects.data ?? []).map((p) => (
          <option key={p.id} value={p.id}>
            {p.name}
          </option>
        ))}
      </select>
    </label>
  );
}

/** A project screen: signed in, the project loaded (404 for a project the caller cannot see). */
function InProject({ screen: Screen }: { screen: FunctionComponent }) {
  const { params } = useRoute();
  const projectId = params.projectId;
  const account = useSignedIn();
  const [tick, setTick] = useState(0);
  // Loaded at once, side by side with the session's Me (the cookie is the same): keyed on the
  // account's id, it was asked again when Me answered and the screen's own requests waited for that
  // second round trip (bench/dashboard.ts's waterfall). A sign-in after a sign-out still reloads it.
  const project = useAsync(
    () => api.projects.getProject({ projectId }).then((r) => r.data),
    [projectId, tick, account !== null],
  );
  if (!account) return <Loading />;
  let body: ComponentChildren;
  if (project.error && !project.data) body = <ErrorMessage error={project.error} />;
  else if (!project.data || project.data.id !== projectId) body = <Loading />;
  else {
    const role = (project.data.role ?? "member") as Role;
    body = (
      <ProjectContext.Provider
        value={{
          project: project.data,
          role,
          canAdmin: role === "owner" || role === "admin",
          reload: () => setTick((t) => t + 1),
        }}
      >
        <Screen />
      </ProjectContext.Provider>
    );
  }
  return (
    <Shell projectId={projectId} projectName={project.data?.name}>
      {body}
    </Shell>
  );
}

function NotFound() {
  return (
    <main id="main" class="narrow">
      <h1>Not found</h1>
      <p>
        This page does not exist. <a href="/projects">Go to your projects</a>.
      </p>
    </main>
  );
}
