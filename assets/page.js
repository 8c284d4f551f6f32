() => {
  // Keyboard: Esc stops the running turn. (Enter sends and Shift+Enter adds a line:
  // Gradio's multi-line textbox does that itself.) Also installs the page's CSS.
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
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.isComposing) return;
    const button = document.querySelector("#stop-btn");
    if (button && !button.disabled) {
      event.preventDefault();
      button.click();
    }
  }, true);
}
