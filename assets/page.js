() => {
  // Installs the page's CSS, the keyboard shortcuts (Esc stops the running turn; Enter
  // sends and Shift+Enter adds a line, which Gradio's textbox does itself) and the input
  // guard: a blank message is not sent at all, and one over the limit is not uploaded but
  // answered with a notice under the input box (the server checks both again).
  if (window.__guiAgentPage) return;
  window.__guiAgentPage = true;
  const css = __GUI_AGENT_CSS__;
  if (css && !document.getElementById("gui-agent-css")) {
    const style = document.createElement("style");
    style.id = "gui-agent-css";
    style.textContent = css;
    document.head.appendChild(style);
  }
  // On a phone the open sessions sidebar would cover the chat: close it once at start.
  if (window.matchMedia("(max-width: 768px)").matches) {
    let tries = 0;
    const closeSidebar = () => {
      const bar = document.querySelector("#session-sidebar");
      if (bar && bar.classList.contains("open")) {
        bar.querySelector('button[aria-label="Toggle Sidebar"]')?.click();
      } else if (++tries < 40) {
        setTimeout(closeSidebar, 50);
      }
    };
    closeSidebar();
  }
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
  const refuse = () => {
    const box = input();
    if (!box) return false;
    const length = box.value.length;
    if (!box.value.trim()) {
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
  document.addEventListener("keydown", (event) => {
    const sending = event.key === "Enter" && !event.shiftKey && !event.isComposing;
    if (sending && event.target === input() && refuse()) {
      event.preventDefault();
      event.stopPropagation();
    }
  }, true);
  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (target?.closest("#send-btn") && refuse()) {
      event.preventDefault();
      event.stopPropagation();
    }
  }, true);
  // The send event calls this when a message really goes out: empty the input box and
  // untick "edit my last message" (the server does not send these back while streaming).
  window.guiAgentSent = () => {
    const box = input();
    if (box && box.value) {
      box.value = "";
      box.dispatchEvent(new Event("input", {bubbles: true}));
    }
    const edit = document.querySelector("#edit-mode input[type=checkbox]");
    if (edit && edit.checked) edit.click();
  };
  // Follow the pushed state: Stop is enabled only while RUNNING or WAITING, and the
  // approval panel is shown only while an approval is open (its title is not empty).
  const sync = () => {
    const state = document.querySelector("#state-badge .ga-badge")?.textContent?.trim();
    const stop = document.querySelector("#stop-btn");
    if (stop) {
      const active = state === "RUNNING" || state === "WAITING";
      stop.disabled = !active;
      stop.setAttribute("aria-disabled", String(!active));
    }
    const title = document.querySelector("#approval-title")?.textContent?.trim();
    const panel = document.querySelector("#approval-panel");
    if (panel) panel.style.display = title ? "" : "none";
  };
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { scheduled = false; sync(); });
  };
  const watched = ["#state-badge", "#approval-title"].map((id) => document.querySelector(id));
  const observer = new MutationObserver(schedule);
  for (const node of watched.every(Boolean) ? watched : [document.body]) {
    observer.observe(node, {subtree: true, childList: true, characterData: true});
  }
  sync();
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.isComposing) return;
    const button = document.querySelector("#stop-btn");
    if (button && !button.disabled) {
      event.preventDefault();
      button.click();
    }
  }, true);
}
