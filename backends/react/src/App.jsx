// The page: signing in (a form when the server has users; the login is kept for the tab over
// a reload, and Sign out forgets it), the person's chats (kept live by
// the chats-list stream, so a chat made or renamed in another tab shows here; the most recent
// first, a page at a time, saying when there are more), and the open chat (Chat.jsx), or an
// export being replayed in its place (Replay.jsx).
import { useCallback, useEffect, useRef, useState } from "react";
import { Chat } from "./Chat.jsx";
import { forgetLogin, keepLogin, resumeLogin } from "./login.js";
import { Replay } from "./Replay.jsx";
import { ImportBox, ReplayBox } from "./Transfer.jsx";

const PAGE = 100; // chats listed at first, and added by "Show more chats"
const MOST = 1000; // the most chats the server lists in one answer (MAX_PAGE_SIZE)

/** The person's `count` most recent chats matching `q`, and one more if there is one (so the
 * list can say there are more), read in as few answers as the server allows. */
async function recentChats(client, q, count) {
  const found = [];
  while (found.length <= count) {
    const limit = Math.min(count + 1 - found.length, MOST);
    const { sessions } = await client.listSessions({ q, limit, offset: found.length });
    found.push(...sessions);
    if (sessions.length < limit) break;
  }
  return found;
}

export function App({ client, api }) {
  const [phase, setPhase] = useState("starting"); // starting | signin | ready | failed
  const [problem, setProblem] = useState(null);
  const [passwords, setPasswords] = useState(false); // the server has users: one can sign out
  const [farewell, setFarewell] = useState(null); // what the sign-in form says after Sign out

  useEffect(() => {
    (async () => {
      try {
        const { auth } = await client.health();
        if (auth === "password") {
          setPasswords(true);
          setPhase((await resumeLogin(client, api)) ? "ready" : "signin");
          return;
        }
        await client.login(); // no login, or the proxy's header says who
        setPhase("ready");
      } catch (error) {
        setProblem(`GuiAgent is not reachable: ${error.message}`);
        setPhase("failed");
      }
    })();
  }, [client, api]);

  // Signed out (by Sign out, or a 401: the login expired): the token is forgotten, here and
  // in the tab's storage.
  const signedOut = useCallback(
    (note = null) => {
      client.useToken(null);
      forgetLogin(client);
      setFarewell(note);
      setPhase("signin");
    },
    [client],
  );
  const expired = useCallback(() => signedOut(), [signedOut]);

  if (phase === "starting") return <p className="hint">Connecting…</p>;
  if (phase === "failed") return <p role="alert" className="problem">{problem}</p>;
  if (phase === "signin") {
    return (
      <SignIn
        client={client}
        api={api}
        note={farewell}
        onSignedIn={() => {
          keepLogin(client);
          setPhase("ready");
        }}
      />
    );
  }
  return (
    <Workspace
      client={client}
      api={api}
      onSignedOut={expired}
      onSignOut={passwords ? signedOut : null}
    />
  );
}

function SignIn({ client, api, note, onSignedIn }) {
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [problem, setProblem] = useState(null);
  const [busy, setBusy] = useState(false);

  async function submit(event) {
    event.preventDefault();
    setBusy(true);
    try {
      await client.login(name, password);
      onSignedIn();
    } catch (error) {
      if (error instanceof api.ApiError && error.status === 401) {
        setProblem("Wrong user name or password.");
      } else if (error instanceof api.ApiError && error.status === 429) {
        setProblem(`Too many attempts: try again in ${Math.ceil(error.retryAfter ?? 60)} s.`);
      } else {
        setProblem(error.message);
      }
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="signin" onSubmit={submit}>
      <h1>Sign in to GuiAgent</h1>
      {note && <p role="status" className="notice">{note}</p>}
      <label>
        User name
        <input value={name} onChange={(e) => setName(e.target.value)} autoComplete="username" />
      </label>
      <label>
        Password
        <input
          type="password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          autoComplete="current-password"
        />
      </label>
      {problem && <p role="alert" className="problem">{problem}</p>}
      <button type="submit" disabled={busy}>Sign in</button>
    </form>
  );
}

function Workspace({ client, api, onSignedOut, onSignOut }) {
  const [sessions, setSessions] = useState([]);
  const [openId, setOpenId] = useState(null);
  const [offer, setOffer] = useState({
    agents: [], models: [], defaultModel: null, notice: null, leftOut: [],
  });
  const [problem, setProblem] = useState(null);
  const [notice, setNotice] = useState(null); // what an import did, shown with the chat
  const [replay, setReplay] = useState(null); // an export being replayed, in place of a chat

  const open = (id) => {
    setNotice(null);
    setProblem(null);
    setReplay(null);
    setOpenId(id);
  };

  const failed = useCallback(
    (error) => {
      if (error instanceof api.ApiError && error.status === 401) onSignedOut();
      else setProblem(error.message);
    },
    [api, onSignedOut],
  );

  const [query, setQuery] = useState("");
  const [count, setCount] = useState(PAGE); // how many chats are listed (more: "Show more")
  const [more, setMore] = useState(false); // there are older chats than those listed
  const asked = useRef(0); // only the newest list asked for is shown (answers may cross)
  const reload = useCallback(async () => {
    const mine = ++asked.current;
    try {
      const found = await recentChats(client, query.trim() || undefined, count);
      if (mine !== asked.current) return;
      setSessions(found.slice(0, count));
      setMore(found.length > count);
    } catch (error) {
      failed(error);
    }
  }, [client, failed, query, count]);

  const latest = useRef(reload); // the list as searched now, for the change stream
  latest.current = reload;
  useEffect(() => {
    reload();
  }, [reload]);

  useEffect(() => {
    Promise.all([client.agents(), client.models()]).then(
      ([agents, models]) =>
        setOffer({
          agents: agents.agents.map((a) => a.name),
          models: models.models.map((m) => m.name),
          defaultModel: models.default,
          notice: models.notice,
          leftOut: models.left_out || [], // (a server from before it was said)
        }),
      failed,
    );
    const changes = client.changes({
      onChange: (change) => {
        latest.current();
        if (change.kind === "deleted") setOpenId((id) => (id === change.session_id ? null : id));
      },
      onResync: () => latest.current(),
      onClosed: failed,
    });
    return () => changes.close();
  }, [client, failed]);

  // The server is told (it signs the token out); the token is forgotten here either
  // way, so a server that cannot be reached does not keep the person signed in on this tab.
  async function signOut() {
    try {
      await client.logout();
      onSignOut();
    } catch (error) {
      onSignOut(`Signed out on this tab, but the server could not be told: ${error.message}`);
    }
  }

  async function newChat() {
    try {
      const { session } = await client.createSession();
      open(session.id);
      reload();
    } catch (error) {
      failed(error);
    }
  }

  return (
    <div className="layout">
      <nav className="sidebar" aria-label="Your chats">
        <div className="who">
          <p className="hint">Signed in as {client.user}</p>
          {onSignOut && <button type="button" onClick={signOut}>Sign out</button>}
        </div>
        <button type="button" className="primary" onClick={newChat}>New chat</button>
        <ImportBox
          client={client}
          onImported={(answer) => {
            open(answer.session.id);
            setNotice(answer.summary); // (in the words the chat page uses)
            reload();
          }}
          onProblem={setProblem}
        />
        <ReplayBox
          client={client}
          onReplay={(answer) => {
            open(null);
            setReplay(answer);
          }}
          onProblem={setProblem}
        />
        <input
          type="search"
          className="search"
          aria-label="Search chats"
          placeholder="Search by title"
          value={query}
          onChange={(e) => {
            setQuery(e.target.value);
            setCount(PAGE); // a new search lists its most recent page first
          }}
        />
        <ListNote shown={sessions.length} more={more} query={query.trim()} />
        <ul>
          {sessions.map((s) => (
            <li key={s.id}>
              <button
                type="button"
                aria-current={s.id === openId ? "page" : undefined}
                onClick={() => open(s.id)}
              >
                {s.title || "Untitled chat"}
              </button>
            </li>
          ))}
        </ul>
        {more && (
          <button type="button" onClick={() => setCount((n) => n + PAGE)}>
            Show more chats
          </button>
        )}
      </nav>
      <main>
        {offer.notice && <p className="notice">{offer.notice}</p>}
        {offer.leftOut.length > 0 && (
          <ul className="notice" id="models-left-out" aria-label="Models left out">
            {offer.leftOut.map((why) => <li key={why}>{why}</li>)}
          </ul>
        )}
        {problem && <p role="alert" className="problem">{problem}</p>}
        {replay ? (
          <Replay replay={replay} onClose={() => setReplay(null)} />
        ) : openId ? (
          <Chat key={openId} client={client} api={api} sessionId={openId} offer={offer}
            notice={notice} onGone={() => open(null)} onSignedOut={onSignedOut} />
        ) : (
          <p className="hint">Start a new chat, or open one from the list.</p>
        )}
      </main>
    </div>
  );
}

/** What the chats list holds, when it is not every chat there is or nothing matched: in the
 * words the Gradio page uses, with the way to the others. */
function ListNote({ shown, more, query }) {
  const kind = query ? "matching chats" : "chats";
  if (more) {
    return (
      <p className="hint">
        Your {shown} most recent {kind}: show more, or search, to find others.
      </p>
    );
  }
  if (query && shown === 0) {
    return <p className="hint">No chats match “{query.slice(0, 80)}”.</p>;
  }
  return null;
}
