import { createContext, type ComponentChildren } from "preact";
import { useContext, useEffect, useState } from "preact/hooks";
import type { Account } from "../../gen/vigil/v1/auth_pb.js";
import type { Project } from "../../gen/vigil/v1/projects_pb.js";
import { api, onSignedOut } from "./api.js";

// Who is signed in (AuthService.Me over the session cookie), and the project a screen works on.

interface SessionState {
  /** undefined while the first Me call runs; null when nobody is signed in. */
  account: Account | null | undefined;
  setAccount: (a: Account | null) => void;
}

const SessionContext = createContext<SessionState>({ account: undefined, setAccount: () => undefined });

export function SessionProvider({ children }: { children: ComponentChildren }) {
  const [account, setAccount] = useState<Account | null | undefined>(undefined);
  useEffect(() => {
    api.auth.me({}).then(
      (r) => setAccount(r.data ?? null),
      // Unauthenticated, or Vigil unreachable: the sign-in page says which when it is used.
      () => setAccount(null),
    );
    return onSignedOut(() => setAccount(null));
  }, []);
  return <SessionContext.Provider value={{ account, setAccount }}>{children}</SessionContext.Provider>;
}

export const useSession = () => useContext(SessionContext);

export type Role = "owner" | "admin" | "member";

export interface ProjectState {
  project: Project;
  role: Role;
  /** Owner or admin: may manage keys, members, webhooks, pages, monitors' settings. */
  canAdmin: boolean;
  reload: () => void;
}

export const ProjectContext = createContext<ProjectState | undefined>(undefined);

/** The project of the current screen (inside a /projects/:projectId route). */
export function useProject(): ProjectState {
  const p = useContext(ProjectContext);
  if (!p) throw new Error("useProject outside a project route");
  return p;
}
