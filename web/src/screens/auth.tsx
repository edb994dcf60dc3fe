import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api } from "../api.js";
import { useSession } from "../session.js";
import { useAction } from "../ui/hooks.js";
import { Button, ErrorMessage, Field } from "../ui/kit.js";

// Sign up and sign in (AuthService over the session cookie). After either, the person goes where
// they were sent from (`?next=`, a path of this dashboard only) or to their projects. On a server
// without any account yet (GetSignupState), sign-in sends the person to sign up: nobody could sign in.

const nextOf = (query: Record<string, string>) =>
  query.next && /^\/(?!\/)/.test(query.next) && !query.next.startsWith("/login") ? query.next : "/projects";

const nextQuery = (query: Record<string, string>) => (query.next ? `?next=${encodeURIComponent(query.next)}` : "");

export function Login() {
  const loc = useLocation();
  const { setAccount } = useSession();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const action = useAction();
  useEffect(() => {
    // Errors leave the sign-in form as it is: it still works, and says so itself.
    api.auth.getSignupState({}).then(
      (r) => r.data && !r.data.accountsExist && loc.route(`/signup${nextQuery(loc.query)}`, true),
      () => undefined,
    );
  }, []);
  return (
    <main id="main" class="auth">
      <h1>Sign in to Vigil</h1>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const r = await action.run(() => api.auth.login({ email, password }));
          if (r?.data) {
            setAccount(r.data);
            loc.route(nextOf(loc.query), true);
          }
        }}
      >
        <Field
          label="Email"
          type="email"
          name="email"
          autoComplete="username"
          required
          value={email}
          onValue={setEmail}
          field="email"
          error={action.error}
        />
        <Field
          label="Password"
          type="password"
          name="password"
          autoComplete="current-password"
          required
          value={password}
          onValue={setPassword}
          field="password"
          error={action.error}
        />
        <ErrorMessage error={action.error} />
        <Button variant="primary" type="submit" busy={action.busy}>
          Sign in
        </Button>
      </form>
      <p class="muted">
        No account yet? <a href={`/signup${nextQuery(loc.query)}`}>Create one</a>.
      </p>
    </main>
  );
}

export function Signup() {
  const loc = useLocation();
  const { setAccount } = useSession();
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const action = useAction();
  return (
    <main id="main" class="auth">
      <h1>Create your Vigil account</h1>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const r = await action.run(() => api.auth.signup({ email, password, name: name || undefined }));
          if (r?.data) {
            setAccount(r.data);
            loc.route(nextOf(loc.query), true);
          }
        }}
      >
        <Field
          label="Name"
          name="name"
          autoComplete="name"
          value={name}
          onValue={setName}
          field="name"
          error={action.error}
        />
        <Field
          label="Email"
          type="email"
          name="email"
          autoComplete="username"
          required
          value={email}
          onValue={setEmail}
          field="email"
          error={action.error}
        />
        <Field
          label="Password"
          type="password"
          name="password"
          autoComplete="new-password"
          required
          value={password}
          onValue={setPassword}
          field="password"
          error={action.error}
          hint="At least 8 characters."
        />
        <ErrorMessage error={action.error} />
        <Button variant="primary" type="submit" busy={action.busy}>
          Create account
        </Button>
      </form>
      <p class="muted">
        Already have an account? <a href="/login">Sign in</a>.
      </p>
    </main>
  );
}
