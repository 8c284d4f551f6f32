// Gradio's login form empties both of its boxes after a wrong password, so the person had
// to type their name again. This gives the name back, with the password box empty and the
// keyboard in it. A name paused for too many wrong passwords is answered 429 with why and
// for how long (login_pause.py), which the form would not show: this shows it in the form,
// until the next answer. It watches only the form's own request (a POST of a form with a
// user name to the app's login address) and keeps the name nowhere but in that request;
// every other request passes through as it is.
(() => {
  const send = window.fetch;
  if (typeof send !== "function") return;
  const nameSent = (resource, init) => {
    const body = init && init.body;
    if (!(body instanceof FormData) || String(init.method || "").toUpperCase() !== "POST") {
      return "";
    }
    const address = typeof resource === "string" ? resource : String(resource && resource.url);
    let path = "";
    try { path = new URL(address, location.href).pathname; } catch (error) { return ""; }
    const name = body.get("username");
    return /\/login\/?$/.test(path) && typeof name === "string" ? name : "";
  };
  const giveBack = (name) => {
    const password = document.querySelector('input[data-testid="password"]');
    const form = password && password.closest(".panel");
    const box = form && form.querySelector('input[data-testid="textbox"]');
    if (!box || box.value) return;  // (never over a name typed since)
    box.value = name;
    box.dispatchEvent(new Event("input", {bubbles: true}));  // (the form's own copy)
    password.focus();
  };
  const PAUSED_ID = "ga-login-paused";
  const sayPaused = (words) => {
    document.getElementById(PAUSED_ID)?.remove();
    const password = document.querySelector('input[data-testid="password"]');
    const form = password && password.closest(".panel");
    const box = form && form.querySelector('input[data-testid="textbox"]');
    const block = box && (box.closest(".block") || box);
    if (!words || !block || !block.parentElement) return;
    const note = document.createElement("p");
    note.id = PAUSED_ID;
    note.setAttribute("role", "alert");
    note.style.color = "var(--error-text-color, #b91c1c)";
    note.style.margin = "0";
    note.style.padding = "var(--block-padding, 10px 12px)";
    note.textContent = words;
    block.parentElement.insertBefore(note, block);
  };
  const pausedWords = async (reply) => {
    try {
      const detail = (await reply.clone().json()).detail;
      if (typeof detail === "string" && detail) return detail;
    } catch (error) {}
    return "Signing in with this name is paused for a while: try again later.";
  };
  window.fetch = function (resource, init) {
    const name = nameSent(resource, init);
    const answer = send.apply(window, arguments);  // (whatever it was called on)
    if (!name) return answer;
    return answer.then(async (reply) => {
      // (the form empties its boxes once this answer is back: give the name back after)
      if (reply.status === 400) setTimeout(() => giveBack(name), 0);
      sayPaused(reply.status === 429 ? await pausedWords(reply) : "");
      return reply;
    });
  };
})();
