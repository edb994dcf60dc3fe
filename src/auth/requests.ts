import { z } from "zod";
import { textSchema } from "../shared/text.js";

// Request parsing and validation for sign-up and login.

const email = z.string().trim().toLowerCase().email().max(320);
export const signupSchema = z.object({
  email,
  password: z.string().min(8, "must be at least 8 characters").max(1024),
  name: textSchema({ min: 1, max: 200 }).optional(),
});
export const loginSchema = z.object({ email, password: z.string().min(1).max(1024) });
