// Gradio's client hears every event of the tab on one stream of server-sent events (a GET
// of the app's queue/data address), opened when an event starts and none is open. The
// server ends that stream with a close_stream message once no event of the tab is left, and
// the client then counts it as closed. When the stream breaks instead (the server stopped
// with it open, or a new one could not connect because the server was down), the client
// tells the events waiting on it that the connection broke, but goes on counting the stream
// as open: every later event of the tab is sent and never hears back, and the page looks
// alive while nothing it does is answered, until it is reloaded. This happened on a server
// restart, when the last answer of an event came in after the stream had closed.
// So a stream that ends or breaks without close_stream is ended here with the two messages
// the client needs: "broken_connection" to every event waiting on it (what the client itself
// tells them, so Gradio says the connection was lost and reloads the page once the server is
// back, if any was waiting), then close_stream, so the tab's next event opens a new stream.
// A stream refused, or that could not connect, is handled as one that broke at once. A
// stream the page itself let go of (aborted) is left as it is, and so is every other request.
(() => {
  const send = window.fetch;
  if (typeof send !== "function" || typeof ReadableStream !== "function") return;
  const CLOSED = /"msg"\s*:\s*"close_stream"/;
  const ENDING = 'data: {"msg":"broken_connection","message":"Connection errored out."}\n\n'
    + 'data: {"msg":"close_stream"}\n\n';
  const isEventStream = (resource, init) => {
    const method = (init && init.method) || (resource && resource.method) || "GET";
    if (String(method).toUpperCase() !== "GET") return false;
    const address = typeof resource === "string" ? resource : String(resource && resource.url);
    try {
      return /\/queue\/data\/?$/.test(new URL(address, location.href).pathname);
    } catch (error) {
      return false;
    }
  };
  const mended = (reply, signal) => {
    // (refused, say for a tab the server does not know: the client would count it as open too)
    if (!reply.ok || !reply.body) return mended(new Response(""), signal);
    const reader = reply.body.getReader();
    const decoder = new TextDecoder();
    let tail = "";  // the end of what came so far (a message can span two chunks)
    let closed = false;
    const end = (controller) => {
      if (closed || (signal && signal.aborted)) {
        controller.close();
        return;
      }
      // (a message cut off in the middle is ended first: the client drops what it cannot read)
      const cut = tail === "" || tail.endsWith("\n\n") ? "" : "\n\n";
      controller.enqueue(new TextEncoder().encode(cut + ENDING));
      controller.close();
    };
    const body = new ReadableStream({
      async pull(controller) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (signal && signal.aborted) controller.error(error);
          else end(controller);
          return;
        }
        if (chunk.done) {
          end(controller);
          return;
        }
        tail = (tail + decoder.decode(chunk.value, {stream: true})).slice(-200);
        if (CLOSED.test(tail)) closed = true;
        controller.enqueue(chunk.value);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    });
    return new Response(body, {
      status: reply.status, statusText: reply.statusText, headers: reply.headers,
    });
  };
  window.fetch = function (resource, init) {
    const answer = send.apply(window, arguments);  // (whatever it was called on)
    if (!isEventStream(resource, init)) return answer;
    const signal = (init && init.signal) || (resource && resource.signal);
    return answer.then((reply) => mended(reply, signal), (error) => {
      if (signal && signal.aborted) throw error;
      // (no stream at all: the server is down) an empty one, ended as a broken one is
      return mended(new Response(""), signal);
    });
  };
})();
