// The login kept for the tab, so a reload does not sign the person out: in sessionStorage,
// which is this tab's alone and is gone when the tab closes (never localStorage, which every
// tab and every later visit of the browser would share). Kept per server address, so two
// servers under one origin keep their logins apart.

function keyOf(client) {
  return `gui-agent.login:${client.baseUrl || "/"}`;
}

/** {token, user} of the login kept for this tab, or null. */
export function keptLogin(client) {
  try {
    const kept = JSON.parse(sessionStorage.getItem(keyOf(client)) ?? "null");
    return typeof kept?.token === "string" ? kept : null;
  } catch (error) {
    // storage turned off, or something else wrote there: the person signs in again
    console.warn("GuiAgent: no login kept for this tab:", error.message);
    return null;
  }
}

/** Keep the client's login (its token and user) for this tab. */
export function keepLogin(client) {
  try {
    sessionStorage.setItem(keyOf(client), JSON.stringify({ token: client.token, user: client.user }));
  } catch (error) {
    // storage turned off or full: signed in all the same, until the next reload
    console.warn("GuiAgent: the login is not kept over a reload:", error.message);
  }
}

/** Forget the login kept for this tab. */
export function forgetLogin(client) {
  try {
    sessionStorage.removeItem(keyOf(client));
  } catch (error) {
    console.warn("GuiAgent: could not forget the kept login:", error.message);
  }
}

/** Sign in again with the login kept for this tab, if there is one and the server still
 * takes it (checked with a cheap call). True when signed in; an expired login (401) is
 * forgotten. Any other failure is thrown: the login may still be good. */
export async function resumeLogin(client, api) {
  const kept = keptLogin(client);
  if (kept === null) return false;
  client.useToken(kept.token, kept.user);
  try {
    await client.models();
    return true;
  } catch (error) {
    client.useToken(null);
    if (error instanceof api.ApiError && error.status === 401) {
      forgetLogin(client);
      return false;
    }
    throw error;
  }
}
