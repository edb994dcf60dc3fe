import { z } from "zod";
import { EMAIL, emailSchema, textSchema } from "../shared/text.js";

// Request parsing and validation for sign-up and login.

export const signupSchema = z.object({
  email: emailSchema,
  password: z.string().min(8, "must be at least 8 characters").max(1024),
  name: textSchema({ min: 1, max: 200 }).optional(),
});
// Login takes any address an account may have been created with (before the 64-character local part).
const loginEmail = z.string().trim().toLowerCase().email({ pattern: EMAIL }).max(320);
export const loginSchema = z.object({ email: loginEmail, password: z.string().min(1).max(1024) });
