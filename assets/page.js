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
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.isComposing) return;
    const button = document.querySelector("#stop-btn");
    if (button && !button.disabled) {
      event.preventDefault();
      button.click();
    }
  }, true);
}
