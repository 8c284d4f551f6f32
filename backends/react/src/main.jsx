// GuiAgent's React front end. The API's browser client is loaded from the server that serves
// this page (one level up from /react/), so the page works under any root path, and always
// speaks the server's own version of the API.
import { createRoot } from "react-dom/client";
import { App } from "./App.jsx";
import "./style.css";

const root = new URL("..", document.baseURI);

async function start() {
  const module = await import(/* @vite-ignore */ new URL("api/client.js", root).href);
  const client = new module.GuiAgentClient(root.pathname.replace(/\/+$/, ""));
  createRoot(document.getElementById("root")).render(<App client={client} api={module} />);
}

start().catch((error) => {
  document.getElementById("root").textContent = `GuiAgent could not start: ${error.message}`;
});
