(payload) => {
  // Turns the export handler's JSON into a file download; nothing is stored on the server.
  if (!payload) return;
  const parsed = JSON.parse(payload);
  const blob = new Blob([JSON.stringify(parsed.document, null, 2)], {type: "application/json"});
  const link = window.document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = parsed.filename || "gui-agent-session.json";
  window.document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}
