import { z } from "zod";

// Request parsing and validation for projects, members and API keys.

const PLATFORMS = ["node", "browser", "react", "next", "other"] as const;
const ENVIRONMENTS = ["production", "development", "preview"] as const;
const name = z.string().trim().min(1, "is required").max(200);

export const createSchema = z.object({ name, platform: z.enum(PLATFORMS) });
export const updateSchema = z.object({ name: name.optional() });
export const keySchema = z.object({
  name,
  environment: z.enum(ENVIRONMENTS),
  kind: z.enum(["secret", "publishable"]).default("secret"),
});
export const addMemberSchema = z.object({
  email: z.string().trim().toLowerCase().email(),
  role: z.enum(["admin", "member"]),
});
export const roleSchema = z.object({ role: z.enum(["admin", "member"]) });
