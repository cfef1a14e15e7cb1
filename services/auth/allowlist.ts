/**
 * Who may log in. Each configured list must be satisfied by the lists that apply to the provider:
 * e-mail domains apply to both providers (OIDC: the verified `email` claim; GitHub: the account's
 * verified addresses), groups only to OIDC, organizations only to GitHub. Empty lists allow all.
 */
import { toIdentity, type Outcome } from "./identity.ts";

export interface AllowLists {
  /** Lower-case e-mail domains, matched exactly. */
  domains: readonly string[];
  groups: readonly string[];
  /** GitHub organization logins, matched case-insensitively as GitHub does. */
  orgs: readonly string[];
}

export interface VerifiedEmail {
  email: string;
  verified: boolean;
}

function domainOf(email: string): string | undefined {
  const at = email.lastIndexOf("@");
  return at > 0 && at < email.length - 1 ? email.slice(at + 1).toLowerCase() : undefined;
}

export function checkDomains(emails: readonly VerifiedEmail[], allowed: readonly string[]): Outcome<true> {
  if (allowed.length === 0) return { ok: true, value: true };
  const verified = emails.filter((e) => e.verified);
  if (verified.length === 0) {
    return {
      ok: false,
      reason:
        "Your account has no verified e-mail address, which is needed to check that you belong to an allowed domain.",
    };
  }
  if (verified.some((e) => allowed.includes(domainOf(e.email) ?? ""))) return { ok: true, value: true };
  const domains = [...new Set(verified.map((e) => domainOf(e.email) ?? e.email))].join(", ");
  return {
    ok: false,
    reason: `Your verified e-mail domain (${domains}) is not one of the domains allowed to use this platform.`,
  };
}

/** Groups come from a configurable claim; IdPs send a list, some a single string. */
export function groupsOf(claim: unknown): string[] {
  if (typeof claim === "string") return [claim];
  if (Array.isArray(claim)) return claim.filter((g): g is string => typeof g === "string");
  return [];
}

export function checkGroups(groups: readonly string[], allowed: readonly string[]): Outcome<true> {
  if (allowed.length === 0) return { ok: true, value: true };
  if (groups.some((g) => allowed.includes(g))) return { ok: true, value: true };
  return { ok: false, reason: "You are not a member of any group that is allowed to use this platform." };
}

export function checkOrgs(orgs: readonly string[], allowed: readonly string[]): Outcome<true> {
  if (allowed.length === 0) return { ok: true, value: true };
  const mine = new Set(orgs.map((o) => o.toLowerCase()));
  if (allowed.some((o) => mine.has(o.toLowerCase()))) return { ok: true, value: true };
  return {
    ok: false,
    reason:
      "Your GitHub account is not a member of any organization allowed to use this platform (if you are, ask an organization owner to approve this application, or make your membership visible to it).",
  };
}

/** The first refusal, or ok. */
export function all(...outcomes: Outcome<true>[]): Outcome<true> {
  return outcomes.find((o) => !o.ok) ?? { ok: true, value: true };
}

export interface OidcIdentityRules {
  usernameClaim: string;
  userPrefix: string;
  groupsClaim: string;
}

/** Some providers (e.g. Cognito) send booleans as strings. */
function isTrue(value: unknown): boolean {
  return value === true || value === "true";
}

/** The identity of an OIDC login and whether it may log in. */
export function decideOidc(
  claims: Record<string, unknown>,
  rules: OidcIdentityRules,
  allow: AllowLists,
): Outcome<string> {
  const emailVerified = isTrue(claims.email_verified);
  // An unverified e-mail can be anyone's: using it as identity would hand over their environment.
  if (rules.usernameClaim === "email" && !emailVerified) {
    return {
      ok: false,
      reason:
        "Your e-mail address is not verified by your identity provider, so it cannot be used as your user name.",
    };
  }
  const identity = toIdentity(
    claims[rules.usernameClaim],
    rules.userPrefix,
    `user name (the "${rules.usernameClaim}" claim)`,
  );
  if (!identity.ok) return identity;
  const emails = typeof claims.email === "string" ? [{ email: claims.email, verified: emailVerified }] : [];
  const allowed = all(
    checkDomains(emails, allow.domains),
    checkGroups(groupsOf(claims[rules.groupsClaim]), allow.groups),
  );
  return allowed.ok ? identity : allowed;
}

export interface GitHubIdentityRules {
  userPrefix: string;
  identity: "login" | "id";
}

/** The identity of a GitHub login and whether it may log in. */
export function decideGitHub(
  account: { login: string; id: number; orgs: readonly string[]; emails: readonly VerifiedEmail[] },
  rules: GitHubIdentityRules,
  allow: AllowLists,
): Outcome<string> {
  const identity =
    rules.identity === "id"
      ? toIdentity(String(account.id), rules.userPrefix, "GitHub account id")
      : toIdentity(account.login, rules.userPrefix, "GitHub login");
  if (!identity.ok) return identity;
  const allowed = all(checkDomains(account.emails, allow.domains), checkOrgs(account.orgs, allow.orgs));
  return allowed.ok ? identity : allowed;
}
