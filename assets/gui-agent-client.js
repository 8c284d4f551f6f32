// GuiAgent's HTTP + SSE API for a browser front end (React, Vue, plain pages): one ES module,
// no dependencies. The server serves it at /api/client.js:
//
//   import { GuiAgentClient } from "/api/client.js";
//   const client = new GuiAgentClient();          // this page's origin ("" = same origin)
//   await client.login();                          // with a users file: login(name, password)
//   const { session } = await client.createSession({ title: "From my page" });
//   const events = client.events(session.id, {
//     onEvent(event) { ... },                      // typed as in `schema` (event.type, .seq)
//   });
//   await events.ready;                            // connected: nothing is missed
//   await client.sendMessage(session.id, "Hello!");
//   ...
//   events.close();
//
// The API refuses other web sites (no CORS), so serve your front end from the same origin,
// or through a proxy (a dev server's proxy of /api) as a browser sees it.
//
// Errors: every failed request rejects with an ApiError (status, code, message, retryAfter),
// or a ConnectionFailed when the server could not be reached. Nothing is retried for you:
// a message sent twice is two messages. An event stream whose connection breaks opens
// again by itself and goes on after the last event it gave (nothing lost, nothing twice).

const API = "/api";
const RECONNECT_LIMIT = 10; // failed openings in a row, after the first hello, before giving up
// The status a stream's `closed` event stands for: the one a new request would get.
const CLOSED_STATUS = { unauthorized: 401, login_unavailable: 503, not_found: 404 };

/** The server answered with an error ({"error": {"code", "message"}}), or not as the API. */
export class ApiError extends Error {
  constructor(status, code, message, retryAfter = null) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter; // seconds, on 429
  }
}

/** The server could not be reached, or a connection broke. */
export class ConnectionFailed extends Error {
  constructor(message) {
    super(message);
    this.name = "ConnectionFailed";
  }
}

/** The path of a session (and what lies under it), each id one path segment. */
function sessionPath(sessionId, ...rest) {
  return [`${API}/sessions`, sessionId, ...rest].map((part, index) =>
    index === 0 ? part : encodeURIComponent(String(part))).join("/");
}

/** An export document as a request body: a File or Blob, its text, or the parsed object. */
function exportBody(document) {
  return typeof document === "string" || document instanceof Blob
    ? document
    : JSON.stringify(document);
}

async function errorOf(response) {
  const text = await response.text().catch(() => "");
  let body = null;
  try { body = JSON.parse(text); } catch (error) { body = null; }
  const retry = Number(response.headers.get("Retry-After"));
  const retryAfter = Number.isFinite(retry) && retry >= 0 ? retry : null;
  const error = body && typeof body === "object" ? body.error : null;
  if (error && typeof error.code === "string" && typeof error.message === "string") {
    return new ApiError(response.status, error.code, error.message, retryAfter);
  }
  // Not the API's shape: a proxy's page, say. Show its start, as text.
  const start = text.replace(/\s+/g, " ").trim().slice(0, 200);
  return new ApiError(response.status, "unexpected_response",
    `HTTP ${response.status} from ${response.url}: ${start || "(no body)"}`, retryAfter);
}

/** A Server-Sent Events frame parser: lines in, {event, data, id, retry} frames out. */
class Frames {
  constructor() { this.reset(); }

  reset() {
    this.event = ""; this.data = []; this.id = null; this.retry = null;
  }

  line(line) {
    if (line === "") {
      const frame = this.data.length
        ? { event: this.event || "message", data: this.data.join("\n"), id: this.id,
            retry: this.retry }
        : null;
      this.reset();
      return frame;
    }
    if (line.startsWith(":")) return null; // a keep-alive comment
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") this.data.push(value);
    else if (name === "event") this.event = value;
    else if (name === "id" && !value.includes("\0")) this.id = value;
    else if (name === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return null;
  }
}

/** A Server-Sent Events stream of the API across the connections it takes: opened with the
 * token, read frame by frame, opened again after a drop (at once, then every `retry:`),
 * given up after RECONNECT_LIMIT failed openings in a row or a first one that fails. The
 * subclasses say what the frames mean. */
class Stream {
  constructor(client, path, handlers) {
    this.client = client;
    this.path = path;
    this.handlers = handlers;
    this.retryMs = 2000;
    this.failures = 0;
    this.greeted = false; // a hello was ever read
    this.closed = false;
    this.controller = null;
    // Settles at the first hello (connected: from then on nothing is missed), or fails
    // with the reason the stream could not start.
    this.ready = new Promise((resolve, reject) => { this.greet = resolve; this.fail = reject; });
    this.ready.catch(() => {}); // not awaited: no unhandled rejection
    this.done = Promise.resolve().then(() => this.run()); // (after the subclass is built)
  }

  /** Stop reading; the stream will not open again. */
  close() {
    this.closed = true;
    this.controller?.abort();
  }

  headers() { return { Accept: "text/event-stream" }; }

  /** Call a handler; one that throws is reported and the stream goes on (its failure is
   * the front end's, not the connection's: nothing is read again or lost). */
  tell(name, ...args) {
    const handler = this.handlers[name];
    if (typeof handler !== "function") return;
    try {
      handler(...args);
    } catch (error) {
      console.error(`GuiAgentClient: the ${name} handler failed`, error);
    }
  }

  async run() {
    while (!this.closed) {
      let ended = false;
      try {
        ended = await this.connect();
      } catch (error) {
        if (this.closed) break;
        if (error instanceof ApiError) { // refused (401: signed out, 404: deleted)
          this.end(error);
          break;
        }
        this.failures += 1;
        if (!this.greeted || this.failures > RECONNECT_LIMIT) {
          this.end(new ConnectionFailed(`${this.path} failed: ${error.message || error}`));
          break;
        }
        this.tell("onReconnecting", error);
        if (this.failures > 1) await new Promise((wake) => setTimeout(wake, this.retryMs));
        continue;
      }
      if (ended) break;
    }
    if (!this.greeted) this.fail(new ConnectionFailed("the stream was closed before it connected"));
  }

  end(error) {
    this.closed = true;
    this.fail(error); // (no effect once it connected)
    this.tell("onClosed", error);
  }

  /** One connection. True when the stream ended for good; false: open it again now. */
  async connect() {
    this.controller = new AbortController();
    const response = await this.client.fetch(this.path, {
      headers: this.headers(), signal: this.controller.signal,
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const frames = new Frames();
    let pending = "";
    let greeted = false;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          if (this.closed) return true;
          throw new ConnectionFailed("the server ended the stream");
        }
        pending += value;
        const lines = pending.split(/\r\n|\r|\n/);
        pending = lines.pop();
        for (const line of lines) {
          const frame = frames.line(line);
          if (frame === null) continue;
          if (frame.retry !== null) this.retryMs = frame.retry;
          if (frame.event === "hello") {
            greeted = true;
            this.failures = 0;
            const hello = JSON.parse(frame.data);
            const again = this.greeted;
            this.greeted = true;
            this.hello(hello, again);
            this.tell("onHello", hello);
            this.greet(hello);
            continue;
          }
          if (!greeted) throw new ConnectionFailed(`the stream began with ${frame.event}`);
          if (frame.event === "closed") { // the caller's access ended, or the chat was deleted
            const { code, message } = JSON.parse(frame.data).error;
            this.end(new ApiError(CLOSED_STATUS[code] ?? 401, code, message));
            return true;
          }
          if (frame.event === "fell_behind") { // too slow a reader: open it again
            this.failures = 0;
            this.fellBehind();
            return false;
          }
          this.frame(frame);
          if (this.closed) return true;
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }
}

/** One session's event stream. See `GuiAgentClient.events`. */
class EventStream extends Stream {
  constructor(client, sessionId, handlers, since) {
    super(client, sessionPath(sessionId, "events"), handlers);
    this.lastEventId = since ?? null; // "<epoch>-<seq>", or a bare seq before the first hello
  }

  headers() {
    const headers = super.headers();
    if (this.lastEventId !== null) headers["Last-Event-ID"] = String(this.lastEventId);
    return headers;
  }

  get lastSeq() {
    if (this.lastEventId === null) return null;
    const seq = Number(String(this.lastEventId).split("-").pop());
    return Number.isInteger(seq) ? seq : null;
  }

  hello(hello) {
    if (hello.resync) {
      // The server no longer holds every event after ours: go on from where it is now, and
      // let the front end load the session again (getSession) to show what was missed.
      this.lastEventId = `${hello.epoch}-${hello.last_seq}`;
      this.tell("onResync", hello);
    } else if (this.lastEventId === null || !String(this.lastEventId).includes("-")) {
      // From here on, ids carry the epoch: a server restart meanwhile is then told apart.
      this.lastEventId = `${hello.epoch}-${this.lastEventId ?? hello.last_seq}`;
    }
  }

  fellBehind() {} // resumed after the last event taken, as the server says

  frame(frame) {
    if (frame.id === null) return;
    const seq = frame.id.split("-").pop();
    const last = this.lastSeq;
    if (!/^\d+$/.test(seq) || (last !== null && Number(seq) <= last)) return; // a repeat
    this.lastEventId = frame.id;
    if (frame.event === "unencodable") return; // the server could not write it as JSON
    this.tell("onEvent", JSON.parse(frame.data));
  }
}

/** The caller's chats list, live. See `GuiAgentClient.changes`. */
class ChangeStream extends Stream {
  constructor(client, handlers) {
    super(client, `${API}/sessions/changes`, handlers);
    this.stale = false; // changes may have been missed: the list must be read again
  }

  hello(hello, again) {
    this.user = hello.user;
    if (again || this.stale) { // changes are not kept: what came meanwhile is gone
      this.stale = false;
      this.tell("onResync", hello);
    }
  }

  fellBehind() { this.stale = true; }

  frame(frame) {
    if (!["created", "imported", "renamed", "deleted"].includes(frame.event)) return;
    this.tell("onChange", JSON.parse(frame.data));
  }
}

/** The API, typed as its OpenAPI document (/api/openapi.json with docs on) describes it. */
export class GuiAgentClient {
  /** `baseUrl`: where the server is ("" for this page's origin). */
  constructor(baseUrl = "") {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = null;
    this.user = null;
  }

  /** A request with the token; resolves to the Response, rejects with ApiError or
   * ConnectionFailed. Redirects are not followed: the token goes nowhere else. */
  async fetch(path, init = {}) {
    const headers = { ...(init.headers || {}) };
    if (this.token !== null) headers.Authorization = `Bearer ${this.token}`;
    let response;
    try {
      response = await fetch(this.baseUrl + path, { ...init, headers, redirect: "error" });
    } catch (error) {
      if (error?.name === "AbortError") throw error;
      throw new ConnectionFailed(`${init.method || "GET"} ${path} failed: ${error.message}`);
    }
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  async call(method, path, body = undefined, query = {}) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined && value !== null) params.set(name, String(value));
    }
    const search = params.toString() ? `?${params}` : "";
    return this.sendJson(method, path + search, body === undefined ? undefined : JSON.stringify(body));
  }

  /** `body` (JSON text, or a Blob of it) sent as JSON; the answer's JSON. */
  async sendJson(method, path, body = undefined) {
    const init = { method };
    if (body !== undefined) {
      init.body = body;
      init.headers = { "Content-Type": "application/json" };
    }
    const response = await this.fetch(path, init);
    if (response.status === 204) return null;
    const text = await response.text();
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new ApiError(response.status, "unexpected_response",
        `${method} ${path} answered with something that is not JSON`);
    }
  }

  /** Sign in (no arguments when the server has no login) and keep the token. The answer
   * also sets the login cookie. */
  async login(username = undefined, password = undefined) {
    const body = username === undefined ? {} : { username, password };
    const answer = await this.call("POST", `${API}/login`, body);
    this.token = answer.token;
    this.user = answer.user;
    return answer;
  }

  /** Take the token of an earlier login (one the page kept, e.g. over a reload) instead of
   * signing in again; null forgets it. Any call checks it: a 401 says it expired. */
  useToken(token, user = null) {
    this.token = token;
    this.user = token === null ? null : user;
  }

  async logout() {
    await this.call("POST", `${API}/logout`);
    this.token = null;
    this.user = null;
  }

  health() { return this.call("GET", `${API}/health`); }
  models() { return this.call("GET", `${API}/models`); }
  agents() { return this.call("GET", `${API}/agents`); }

  listSessions({ q, limit, offset } = {}) {
    return this.call("GET", `${API}/sessions`, undefined, { q, limit, offset });
  }

  /** {agent?, model?, settings?, title?} → {session} */
  createSession(fields = {}) { return this.call("POST", `${API}/sessions`, fields); }

  /** The session, its last `limit` messages (all by default), its state and `last_seq`. */
  getSession(sessionId, { limit } = {}) {
    return this.call("GET", sessionPath(sessionId), undefined, { limit });
  }

  /** What the next model call would be sent of the history (the memory window):
   * {message_ids (oldest first), token_count, token_estimated, goal, goal_pinned, dropped} */
  memory(sessionId) { return this.call("GET", sessionPath(sessionId, "memory")); }

  /** The chat's tools: {tools: [{name, description, destructive, mode, chosen,
   * allowed_for_session}]}; `mode` is what a call does now (allow, ask or deny). */
  tools(sessionId) { return this.call("GET", sessionPath(sessionId, "tools")); }

  /** What a call of `tool` does in this chat: "ask", "allow", "deny", or null for what the
   * app decides. Kept with the chat's settings; answers the tool as it stands now. */
  setToolMode(sessionId, tool, mode) {
    return this.call("PUT", sessionPath(sessionId, "tools", tool), { mode: mode ?? null });
  }

  /** Ask again before `tool` runs (every tool allowed for this session when none is
   * given): {allowed_tools}, the tools still allowed without asking. */
  forgetAllowedTools(sessionId, { tool } = {}) {
    return this.call("DELETE", sessionPath(sessionId, "allowed-tools"), undefined, { tool });
  }

  /** Only what is given changes: {title?, settings?, autochat?, agent?, model?} */
  updateSession(sessionId, changes) { return this.call("PATCH", sessionPath(sessionId), changes); }

  deleteSession(sessionId) { return this.call("DELETE", sessionPath(sessionId)); }

  /** The export document (JSON) as a Blob, to save as a file. A chat that could not be
   * imported back (too large, too many messages) rejects with ApiError 413 or 400, whose
   * message says why, unless `allowUnimportable`. */
  async exportSession(sessionId, { allowUnimportable = false } = {}) {
    const query = allowUnimportable ? "?allow_unimportable=true" : "";
    const response = await this.fetch(sessionPath(sessionId, "export") + query);
    return response.blob();
  }

  /** A new session from an export document (a File or Blob, its text, or the parsed
   * object): {session, message_count, reset, repairs, summary}. What the file held that an
   * import never carries over is in `reset`; what was repaired, counted, in `repairs`; all
   * of it said in plain words, as the chat page says it, in `summary`. */
  importSession(document) {
    return this.sendJson("POST", `${API}/sessions/import`, exportBody(document));
  }

  /** An export document's events in order, to show the chat step by step; nothing is
   * saved: {title, message_count, events}. Refused as an import would refuse the file. */
  replayExport(document) {
    return this.sendJson("POST", `${API}/sessions/replay`, exportBody(document));
  }

  /** Starts a turn (or queues the message behind the running one): {message_id} */
  sendMessage(sessionId, text, { images, agent } = {}) {
    const body = { text };
    if (images !== undefined) body.images = images;
    if (agent !== undefined) body.agent = agent;
    return this.call("POST", sessionPath(sessionId, "messages"), body);
  }

  stop(sessionId) { return this.call("POST", sessionPath(sessionId, "stop")); }

  /** `decision`: "allow_once", "allow_session" or "deny"; the note goes to the agent. */
  answerApproval(sessionId, approvalId, decision, { note } = {}) {
    const body = note === undefined ? { decision } : { decision, note };
    return this.call("POST", sessionPath(sessionId, "approvals", approvalId), body);
  }

  /** `messageId`: the person's last message as the client shows it; another one sent
   *  since (another tab) makes it a 409 ApiError, and nothing changes. */
  retry(sessionId, { messageId } = {}) {
    const body = { action: "retry" };
    if (messageId !== undefined) body.message_id = messageId;
    return this.call("POST", sessionPath(sessionId, "control"), body);
  }

  /** `messageId`: the message being edited (as for `retry`): edited as it was, a message
   *  sent since from another tab was dropped with its reply. */
  editLast(sessionId, text, { images, messageId } = {}) {
    const body = { action: "edit_last", text };
    if (images !== undefined) body.images = images;
    if (messageId !== undefined) body.message_id = messageId;
    return this.call("POST", sessionPath(sessionId, "control"), body);
  }

  clear(sessionId) {
    return this.call("POST", sessionPath(sessionId, "control"), { action: "clear" });
  }

  /** Follow a session's events. Open it before sending, so nothing is missed. `handlers`:
   *   onEvent(event)      each event once, in order (event.type, event.seq, ...)
   *   onHello(hello)      each connection's greeting: state, open approvals, replies being
   *                       written with their text so far, last_seq
   *   onResync(hello)     events were missed beyond what the server holds: load the
   *                       session again (getSession); the stream goes on live
   *   onReconnecting(err) the connection broke; it is being opened again
   *   onClosed(err)       the stream ended for good: access ended (ApiError 401), the
   *                       session is gone (404), or the server stayed unreachable
   * `since`: an event id or seq to resume after (null: live events only).
   * Returns {ready, close(), done}: await `ready` (the first hello) before sending so
   * nothing is missed; close() stops it; `done` settles when it has ended. */
  events(sessionId, handlers = {}, { since = null } = {}) {
    const stream = new EventStream(this, sessionId, handlers, since);
    return { ready: stream.ready, close: () => stream.close(), done: stream.done, stream };
  }

  /** Follow the caller's chats list: every chat of theirs created, imported, renamed or
   * deleted, from any tab or client. `handlers`:
   *   onChange(change)    {kind, session_id, title}
   *   onResync(hello)     the stream opened again after a drop: changes meanwhile are not
   *                       kept, so read the list again (listSessions)
   *   onHello, onReconnecting, onClosed   as for `events`
   * Returns {ready, close(), done}, as `events` does. */
  changes(handlers = {}) {
    const stream = new ChangeStream(this, handlers);
    return { ready: stream.ready, close: () => stream.close(), done: stream.done, stream };
  }
}
