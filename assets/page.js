() => {
  // Installs the page's CSS, the keyboard shortcuts (Esc stops the running turn or
  // AutoChat, except in an open drop-down list, which it closes; Enter sends and Shift+Enter adds a line, which Gradio's textbox does itself;
  // Enter in the approval note denies with it)
  // and the input guard: a blank message without images is not sent at all, and one over
  // the limit is not uploaded but answered with a notice under the input box (the server
  // checks both again).
  if (window.__guiAgentPage) return;
  window.__guiAgentPage = true;
  // Images and media load only from the app itself (its icons are data URLs, attached
  // pictures data or blob URLs): an <img> a model's reply got through to the chat, past the
  // escaping of its Markdown, still fetches nothing from elsewhere, so it cannot carry data
  // out in its address. A policy can be added this way, never loosened.
  if (!document.getElementById("gui-agent-policy")) {
    const policy = document.createElement("meta");
    policy.id = "gui-agent-policy";
    policy.httpEquiv = "Content-Security-Policy";
    policy.content = "img-src 'self' data: blob:; media-src 'self' data: blob:";
    document.head.prepend(policy);
  }
  const css = __GUI_AGENT_CSS__;
  if (css && !document.getElementById("gui-agent-css")) {
    const style = document.createElement("style");
    style.id = "gui-agent-css";
    style.textContent = css;
    document.head.appendChild(style);
  }
  // On a phone the open sessions sidebar would cover the chat: close it at start, and
  // again once a chat is picked (or a new one started) in it.
  const phone = () => window.matchMedia("(max-width: 768px)").matches;
  const closeSidebar = (tries) => {
    const bar = document.querySelector("#session-sidebar");
    if (bar && bar.classList.contains("open")) {
      bar.querySelector('button[aria-label="Toggle Sidebar"]')?.click();
    } else if (tries > 0) {
      setTimeout(() => closeSidebar(tries - 1), 50);
    }
  };
  if (phone()) closeSidebar(40);
  // The message box has the focus as the page opens, and the browser scrolls to it while
  // the page is still taking shape (on a phone, with the sidebar still open above it): once
  // the layout has moved, it may be out of sight, above the top of the screen with the chat.
  // On a larger screen it scrolled down as the chat was sized, hiding the title and the notice
  // above. Until the person does anything, keep the whole box in sight with the least
  // scrolling: none when the page fits down to the box, else the box's bottom at the screen's
  // bottom (the chat above it shows as much as fits).
  const settle = () => {
    const box = document.querySelector("#chat-input textarea");
    if (!box || document.activeElement !== box) return;
    const bottom = box.getBoundingClientRect().bottom + window.scrollY;
    const wanted = Math.max(0, Math.ceil(bottom - window.innerHeight));
    if (Math.abs(window.scrollY - wanted) >= 1) window.scrollTo(window.scrollX, wanted);
  };
  const settling = new ResizeObserver(() => requestAnimationFrame(settle));
  settling.observe(document.body);
  const settled = () => settling.disconnect();
  for (const kind of ["pointerdown", "keydown", "wheel", "touchstart"]) {
    document.addEventListener(kind, settled, {capture: true, once: true});
  }
  setTimeout(settled, 30000);
  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (phone() && target?.closest("#session-list label, #new-session-btn")) {
      setTimeout(() => closeSidebar(0), 0);
    }
  });
  const maxChars = __GUI_AGENT_MAX_CHARS__;
  const input = () => document.querySelector("#chat-input textarea");
  const notice = (text) => {
    let box = document.getElementById("ga-input-notice");
    if (!box && text) {
      box = document.createElement("div");
      box.id = "ga-input-notice";
      box.className = "ga-input-notice";
      box.setAttribute("role", "alert");
      document.querySelector(".ga-input-row")?.insertAdjacentElement("afterend", box);
    }
    if (box) {
      box.textContent = text;
      box.hidden = !text;
    }
  };
  // Images wait on the server for the next message; the note under the input box says so.
  const imagesAttached = () =>
    !!document.querySelector("#attach-note")?.textContent?.trim();
  // A tab whose page login ended (signed_out.js, or the keep-alive finding the server
  // asks it to sign in) sends nothing more: a send would be refused and its message lost.
  // It says so under the box and gives back the message a refused send carried (found by
  // the send's ticket, the last of its inputs: app.py tells guiAgentTicketed each one).
  const SIGNED_OUT_WORDS = "You are signed out (the server restarted, your password " +
    "changed, or your account was removed). Reload the page and sign in again; what you " +
    "typed stays in the box.";
  const ticketed = new Map();  // ticket -> the text its send carried (the last few)
  let signedOut = false;
  window.guiAgentTicketed = (ticket, text) => {
    ticketed.set(String(ticket), String(text ?? ""));
    if (ticketed.size > 20) ticketed.delete(ticketed.keys().next().value);
  };
  window.addEventListener("gui-agent-signed-out", (event) => {
    signedOut = true;
    const data = event.detail && event.detail.data;
    const text = Array.isArray(data) && data.length ? ticketed.get(String(data.at(-1))) : "";
    const box = input();
    if (text && box && !box.value) fill(box, text);
    notice(SIGNED_OUT_WORDS);
  });
  const refuse = () => {
    const box = input();
    if (!box) return false;
    if (signedOut) {
      notice(SIGNED_OUT_WORDS);
      return true;
    }
    const length = box.value.length;
    if (!box.value.trim() && !imagesAttached()) {
      notice("");
      return true;
    }
    if (length > maxChars) {
      const fmt = (n) => n.toLocaleString("en-US");
      notice(`Your message has ${fmt(length)} characters; the limit is ${fmt(maxChars)}. ` +
             "Please shorten it.");
      return true;
    }
    notice("");
    return false;
  };
  // A send carries what the box held when the person pressed Enter or clicked Send. Gradio
  // reads the box later (after its own awaits: tens of ms on a busy page), and a message
  // typed in that moment went out in place of the one sent, which was lost. So the text is
  // taken as the person sends, in order, for the send event (app.py calls guiAgentOutgoing)
  // and the box is emptied at once. A text no send event takes (Gradio sent nothing, as
  // when its connection is lost) goes back in the box after OUTBOX_MS, if the box is empty.
  const OUTBOX_MS = 5000;
  const outbox = [];
  const fill = (box, text = "") => {  // (Gradio's copy and the kept draft follow the box)
    box.value = text;
    box.dispatchEvent(new Event("input", {bubbles: true}));
  };
  const take = () => {
    const box = input();
    const entry = {text: box.value, timer: 0};
    entry.timer = setTimeout(() => {
      const at = outbox.indexOf(entry);
      if (at < 0) return;
      outbox.splice(at, 1);
      const now = input();
      if (now && !now.value && entry.text) fill(now, entry.text);
    }, OUTBOX_MS);
    outbox.push(entry);
    if (box.value) fill(box);
  };
  window.guiAgentOutgoing = (gathered) => {
    const entry = outbox.shift();
    if (entry) {
      clearTimeout(entry.timer);
      return entry.text;
    }
    const box = input();  // (a send this script did not see: the box as Gradio read it)
    if (box && box.value && box.value === gathered) fill(box);
    return gathered;
  };
  document.addEventListener("keydown", (event) => {
    const sending = event.key === "Enter" && !event.shiftKey && !event.isComposing;
    if (!sending || event.target !== input()) return;
    if (refuse()) {
      event.preventDefault();
      event.stopPropagation();
    } else {
      take();
    }
  }, true);
  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target?.closest("#send-btn") || !input()) return;
    if (refuse()) {
      event.preventDefault();
      event.stopPropagation();
    } else {
      take();
    }
  }, true);
  // The temperature's number box keeps what was typed in it when it is left, as the
  // Advanced settings' boxes do. Gradio's slider would put the nearest end of its range
  // there (2 for 5): a send read that, saved it, and the model ran with it, though the
  // server had refused the value typed (the note names it: typed_slider.py). Its own blur
  // handler, which does that, sits on the box itself: a capturing listener on the window
  // runs first and stops the event. (The box saves itself as it is typed: "input".)
  window.addEventListener("blur", (event) => {
    const box = event.target instanceof Element ? event.target : null;
    if (box?.matches("#temperature input[type=number]")) event.stopImmediatePropagation();
  }, true);
  // What the person is typing is kept in the tab's session storage as they type, so a
  // reload (theirs, or the page's own after a lost connection) gives it back: app.py calls
  // guiAgentDraftBack once the reloaded page has its chat. A send empties the box, and so
  // the kept draft. Nothing is kept if the browser refuses storage. A draft is given back
  // only to the person who typed it (the name the page says is signed in): signed out, or
  // after a restart, the next person to sign in on this tab may be someone else.
  const DRAFT_KEY = "gui-agent-draft:" + location.pathname;
  const signedInAs = () => document.querySelector("#account strong")?.textContent ?? "";
  document.addEventListener("input", (event) => {
    const box = input();
    if (!box || event.target !== box) return;
    try {
      if (box.value) {
        sessionStorage.setItem(DRAFT_KEY, JSON.stringify({who: signedInAs(), text: box.value}));
      } else {
        sessionStorage.removeItem(DRAFT_KEY);
      }
    } catch (error) {}
  }, true);
  // Pictures pasted into the message box (a screenshot, an image copied in a browser) are
  // attached as "Attach images" would (attach.py checks them the same way); the text of a
  // paste goes in the box as usual. The browser hands the files to the upload button's own
  // file input, so Gradio uploads them exactly as if they had been picked.
  document.addEventListener("paste", (event) => {
    const box = input();
    if (!box || event.target !== box || !event.clipboardData) return;
    const pictures = [...event.clipboardData.files].filter((f) => f.type.startsWith("image/"));
    // (Gradio puts the upload button's file input just before the button)
    const button = document.querySelector("#attach-btn");
    const before = button?.previousElementSibling;
    const picker = before?.matches("input[type=file]")
      ? before : button?.parentElement?.querySelector("input[type=file]");
    if (!pictures.length || !picker) return;
    if (!event.clipboardData.getData("text/plain")) event.preventDefault();
    const files = new DataTransfer();
    for (const picture of pictures) files.items.add(picture);
    picker.files = files.files;
    picker.dispatchEvent(new Event("change", {bubbles: true}));
  }, true);
  window.guiAgentDraftBack = () => {
    let text = "";
    try {
      const kept = JSON.parse(sessionStorage.getItem(DRAFT_KEY) || "null");
      if (kept && kept.who === signedInAs() && typeof kept.text === "string") text = kept.text;
    } catch (error) {}
    const box = input();
    if (!text || !box || box.value) return;  // never over what was typed since
    fill(box, text);
  };
  // The system prompt and the Advanced settings save when the person leaves the box or
  // presses Enter, so a reload from inside one (or within the save's round trip) would
  // lose what was typed there. Each such box's text is kept in the tab's session storage
  // as it is typed, for the chat the tab shows, until the server's answer shows the box in
  // step with that chat (app.py calls guiAgentSettingsGot with the tab's new base:
  // bases.py). The reloaded page's first event sends what is kept (app.py reads it), and
  // the server saves it as leaving the box would have (unsaved.py). The tool modes set in a
  // new chat are kept with it (`modes`): the reloaded tab's new chat is made with them.
  const UNSAVED_KEY = __GUI_AGENT_UNSAVED_KEY__;
  const SAVED_WHEN_LEFT = __GUI_AGENT_SAVED_WHEN_LEFT__;  // element id -> settings field
  const shownChat = () =>
    document.querySelector("#session-id textarea, #session-id input")?.value ?? "";
  const keptUnsaved = () => {
    try {
      const kept = JSON.parse(sessionStorage.getItem(UNSAVED_KEY) || "null");
      if (kept && typeof kept.chat === "string" && kept.boxes && typeof kept.boxes === "object") {
        return kept;
      }
    } catch (error) {}
    return null;
  };
  const keepUnsaved = (kept) => {
    try {
      if (kept && (Object.keys(kept.boxes).length || Object.keys(kept.modes ?? {}).length)) {
        sessionStorage.setItem(UNSAVED_KEY, JSON.stringify(kept));
      } else {
        sessionStorage.removeItem(UNSAVED_KEY);
      }
    } catch (error) {}
  };
  document.addEventListener("input", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target?.matches("input, textarea")) return;
    const id = Object.keys(SAVED_WHEN_LEFT).find((each) => target.closest(`#${each}`));
    if (!id) return;
    const chat = shownChat();
    const was = keptUnsaved();
    const kept = was && was.chat === chat ? was : {chat, boxes: {}};
    kept.boxes[id] = target.value;
    keepUnsaved(kept);
  }, true);
  // A tool's mode set in a new chat (app.py calls this once the server answered: `mode` is
  // as the page shows it, "" for the app's own, null for one refused).
  window.guiAgentNewChatMode = (chat, tool, mode) => {
    if (chat || shownChat() || !tool) return;  // (a chat's modes are saved with it)
    const was = keptUnsaved();
    const kept = was && was.chat === "" ? was : {chat: "", boxes: {}};
    const modes = {...(kept.modes ?? {})};
    if (mode) modes[tool] = mode; else delete modes[tool];
    keepUnsaved({...kept, modes});
  };
  // New chat, from a new chat: the modes set in it are let go (the server's are).
  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target?.closest("#new-session-btn")) return;
    const kept = keptUnsaved();
    if (kept && kept.chat === "" && kept.modes) keepUnsaved({...kept, modes: {}});
  }, true);
  // When the tab shows another chat (app.py calls this), text kept for the one it showed
  // is let go: that chat's boxes are gone from the page (left, they saved themselves), and a
  // new chat's boxes went into the chat its first message made.
  window.guiAgentShowing = (chat) => {
    const kept = keptUnsaved();
    if (kept && kept.chat !== chat) keepUnsaved(null);
  };
  window.guiAgentSettingsGot = (raw) => {
    const kept = keptUnsaved();
    if (!kept) return;
    let base = null;
    try { base = JSON.parse(raw || "null"); } catch (error) {}
    if (!base || typeof base.values !== "object" || !base.values) return;
    // (kept for a new chat: the chat its first message made from the boxes counts)
    if (kept.chat && kept.chat !== base.session) return;
    for (const [id, text] of Object.entries(kept.boxes)) {
      if (base.values[SAVED_WHEN_LEFT[id]] === text) delete kept.boxes[id];
    }
    keepUnsaved(kept);
  };
  // The send event calls this when a message really goes out: untick "edit my last
  // message" (the server does not send it back while streaming).
  window.guiAgentSent = () => {
    const edit = document.querySelector("#edit-mode input[type=checkbox]");
    if (edit && edit.checked) edit.click();
  };
  // The tab's keep-alive event brings it what changes elsewhere (presence.py). When it ends
  // while the tab stays open (the server restarted, the event failed), the page starts it
  // again (app.py calls this with the count of such starts, and starts it with the count
  // returned): only once the server answers (while it is down, the page only asks whether
  // it is back), after a wait that doubles with each start in a row that did not last, from
  // half a second up to a minute, a little more or less each time (the tabs of a server that
  // comes back do not all come at once). A tab that is signed out is not started again.
  const KEEP_FIRST_MS = 500;
  const KEEP_MOST_MS = 60000;
  const KEEP_LASTED_MS = 60000;  // a keep-alive that lasted this long ended on its own
  const keepAlive = {tries: 0, started: Date.now()};
  const keepDelay = (tries) => Math.min(KEEP_MOST_MS, KEEP_FIRST_MS * 2 ** tries);
  const serverAnswers = async () => {
    // Where Gradio's client sends events (a login-checked page of its API).
    const config = window.gradio_config || {};
    const root = new URL(config.root || "/", window.location.href);
    const base = root.hostname === window.location.hostname
      ? window.location.origin + root.pathname : root.href;
    const url = base.replace(/\/+$/, "") + (config.api_prefix || "/gradio_api") + "/info";
    try {
      const reply = await fetch(url, {cache: "no-store", credentials: "same-origin"});
      if (reply.status === 401 || reply.status === 403) return "signed out";
      return reply.ok ? "yes" : "no";
    } catch (error) {
      return "no";
    }
  };
  window.guiAgentKeepAgain = async (again) => {
    if (Date.now() - keepAlive.started >= KEEP_LASTED_MS) keepAlive.tries = 0;
    for (;;) {
      const wait = keepDelay(keepAlive.tries) * (0.75 + Math.random() / 2);
      keepAlive.tries += 1;
      await new Promise((resolve) => setTimeout(resolve, wait));
      const answer = await serverAnswers();
      if (answer === "signed out") {
        window.dispatchEvent(new CustomEvent("gui-agent-signed-out", {detail: {data: null}}));
        return again;
      }
      if (answer === "yes") break;
    }
    keepAlive.started = Date.now();
    return String((Number.parseInt(again, 10) || 0) + 1);
  };
  window.guiAgentKeepAgain.delay = keepDelay;  // (before the jitter: the tests read it)
  // Follow the pushed state: Stop is enabled only while there is something to stop (a
  // turn RUNNING or WAITING, or AutoChat, also between its turns: the badge says so), and
  // the approval panel is shown only while an approval is open (its title holds one; text
  // Gradio itself puts there, such as an error label, does not count).
  // Screen readers hear what changes without a look: the state badge is a status (read
  // out politely when the agent starts, waits or ends), the approval panel a named region
  // whose title is an alert (read out at once when an approval opens). Set on the boxes
  // that hold just the text (not on the components: Gradio's progress tracker inside them
  // changes with every streamed update, which would repeat the announcement), and again on
  // every sync in case Gradio re-creates them.
  const announce = () => {
    const set = (selector, attributes) => {
      const node = document.querySelector(selector);
      if (!node) return;
      for (const [name, value] of Object.entries(attributes)) {
        if (node.getAttribute(name) !== value) node.setAttribute(name, value);
      }
    };
    set("#state-badge .html-container", {"role": "status", "aria-atomic": "true"});
    set("#approval-panel", {"role": "region", "aria-label": "Approval needed"});
    set('#approval-title [data-testid="markdown"]', {"role": "alert", "aria-atomic": "true"});
  };
  const sync = () => {
    announce();
    const badge = document.querySelector("#state-badge .ga-badge");
    const stop = document.querySelector("#stop-btn");
    if (stop) {
      const active = badge?.getAttribute("data-stoppable") === "true";
      stop.disabled = !active;
      stop.setAttribute("aria-disabled", String(!active));
    }
    const shown = shownApproval();
    if (shown !== answered) answered = null; // another approval, or none: show what comes
    const panel = document.querySelector("#approval-panel");
    const open = shown !== null && shown !== answered;
    if (panel) panel.style.display = open ? "" : "none";
    // An approval that opens below the fold is brought into view, its buttons too; once it
    // is answered (or gone), the message box and the chat above it are, rather than the
    // page staying scrolled to where the panel was. Nothing moves what is in view already.
    if (open && shown !== inView) {
      inView = shown;
      requestAnimationFrame(() => intoView("#deny-btn", "end"));
    } else if (!open && inView !== null) {
      inView = null;
      requestAnimationFrame(() => intoView("#chat-input", "end"));
    }
  };
  let inView = null; // the approval last brought into view
  const intoView = (selector, block) => {
    const node = document.querySelector(selector);
    if (!node) return;
    const box = node.getBoundingClientRect();
    if (box.top >= -1 && box.bottom <= window.innerHeight + 1) return; // (a fraction off)
    node.scrollIntoView({block});
  };
  // The approval the panel shows (the class with its id), or null when none is open.
  const shownApproval = () => {
    const span = document.querySelector("#approval-title .ga-approval");
    if (!span) return null;
    return [...span.classList].find((name) => name.startsWith("ga-approval-")) ?? "";
  };
  // The approval this tab just answered: its panel is hidden at once, and stays hidden
  // until the page shows another one (the next call of the same reply) or none. Only the
  // session's stream changes the panel, so the next approval is never hidden by the answer
  // to the one before it.
  let answered = null;
  const answering = () => {
    answered = shownApproval();
    sync();
  };
  // "Log out" (team mode) leaves this page, in this tab (Gradio opens Markdown links in
  // a new one).
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest("#account a") : null;
    if (link) {
      event.preventDefault();
      window.location.assign(link.href);
    }
  }, true);
  // After Send or Stop is clicked, or New chat, the keyboard goes back to the message box
  // (Stop is disabled as the turn ends, which dropped the focus to the page; Send and New
  // chat kept it, so the person had to click into the box before typing on).
  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (target?.closest("#send-btn, #stop-btn, #new-session-btn")) {
      setTimeout(() => input()?.focus(), 0);
    }
  });
  // "Clear chat" asks in a row under the buttons, which on a short window opened below its
  // bottom edge, out of sight: once the row shows (the server's answer), it is brought into
  // view. (A chat with nothing to clear shows no row: the wait ends after WHEN_SHOWN_MS.)
  const WHEN_SHOWN_MS = 10000;
  const whenShown = (selector, then, until = performance.now() + WHEN_SHOWN_MS) => {
    const node = document.querySelector(selector);
    if (node && node.getClientRects().length) then();
    else if (performance.now() < until) {
      requestAnimationFrame(() => whenShown(selector, then, until));
    }
  };
  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (target?.closest("#clear-btn")) {
      whenShown("#confirm-clear-row", () => intoView("#confirm-clear-row", "nearest"));
    }
  });
  // Answering an approval hides its panel, and the focused button with it: keep the
  // keyboard in the message box instead of losing it to the page.
  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (target?.closest("#approve-once-btn, #approve-session-btn, #deny-btn")) {
      answering();
      setTimeout(() => input()?.focus(), 0);
    }
  });
  // Enter in the approval note denies with that note (the server's `approver`); Shift+Enter
  // adds a line, and an empty note decides nothing. A denial hides the panel: the keyboard
  // goes back to the message box, as after a click.
  document.addEventListener("keydown", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const note = target?.closest("#approval-note textarea");
    const denying = event.key === "Enter" && !event.shiftKey && !event.isComposing;
    if (note && denying && note.value.trim()) {
      answering();
      setTimeout(() => input()?.focus(), 0);
    }
  });
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { scheduled = false; sync(); });
  };
  const watched = ["#state-badge", "#approval-title"].map((id) => document.querySelector(id));
  const observer = new MutationObserver(schedule);
  for (const node of watched.every(Boolean) ? watched : [document.body]) {
    observer.observe(node, {subtree: true, childList: true, characterData: true, attributes: true});
  }
  sync();
  // Esc in an open list (the role or model picker) only closes the list.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.isComposing) return;
    const target = event.target instanceof Element ? event.target : null;
    if (target?.closest('[aria-expanded="true"], [role="listbox"]')) return;
    // In step with the badge first: `sync` waits for the next frame, which a busy machine
    // delays, and Esc pressed as RUNNING shows must not find the button still disabled.
    sync();
    const button = document.querySelector("#stop-btn");
    if (button && !button.disabled) {
      event.preventDefault();
      button.click();
    }
  }, true);
}
