// A tab whose page login ended while it stayed open (the server restarted, and with it
// Gradio's page logins; the person's password was changed) learns it only when its next
// event is refused: Gradio's client then drops that event without a word, and with a send
// the message the box had already given up. This tells the page (page.js) at once, with the
// refused event's inputs, so it can give that message back and say why. It watches only the
// answers to the page's own event requests (queue/join); every request passes as it is.
(() => {
  const send = window.fetch;
  if (typeof send !== "function") return;
  const joins = (resource) => {
    const address = typeof resource === "string" ? resource : String(resource && resource.url);
    try {
      return /\/queue\/join\/?$/.test(new URL(address, location.href).pathname);
    } catch (error) {
      return false;
    }
  };
  window.fetch = function (resource, init) {
    const answer = send.apply(window, arguments);  // (whatever it was called on)
    if (!joins(resource)) return answer;
    return answer.then((reply) => {
      if (reply.status === 401 || reply.status === 403) {
        let data = null;
        try {
          const body = init && typeof init.body === "string" ? JSON.parse(init.body) : null;
          data = body && Array.isArray(body.data) ? body.data : null;
        } catch (error) {}
        window.dispatchEvent(new CustomEvent("gui-agent-signed-out", {detail: {data}}));
      }
      return reply;
    });
  };
})();
