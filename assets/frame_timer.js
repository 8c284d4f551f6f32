// Runs in the page's <head>, before Gradio's own scripts (backends/gradio/early_script.py).
//
// Gradio's status trackers count how long an event has run by asking for an animation
// frame, every frame, and one of them goes on counting on a page that does nothing: the
// browser then draws 60 frames a second for as long as the tab is open (a tenth of a CPU
// core, for a chat page people keep open all day). The page hides every tracker's progress,
// so nobody sees that count. Gradio reads `requestAnimationFrame` once, when its scripts
// load; here, before that, the count's callback is given a timer of a quarter second
// instead of a frame. The count is known by its shape (a short arrow function that turns
// `performance.now()` into seconds); every other callback gets its frame as before, and a
// Gradio whose count reads differently is left exactly as it is.
(() => {
  const frame = window.requestAnimationFrame?.bind(window);
  const cancelFrame = window.cancelAnimationFrame?.bind(window);
  if (!frame || !cancelFrame) return;
  const COUNTER = /^\(\)=>\{[^{}]*performance\.now\(\)[^{}]*\/1e3[^{}]*\}$/;
  const TICK_MS = 250;
  const judged = new WeakMap();
  const timers = new Map();
  let next = 0;
  const isCounter = (callback) => {
    let verdict = judged.get(callback);
    if (verdict === undefined) {
      const source = Function.prototype.toString.call(callback);
      verdict = source.length < 200 && COUNTER.test(source);
      judged.set(callback, verdict);
    }
    return verdict;
  };
  window.requestAnimationFrame = (callback) => {
    if (typeof callback !== "function" || !isCounter(callback)) return frame(callback);
    const id = --next; // negative: never one the browser hands out
    timers.set(id, setTimeout(() => {
      timers.delete(id);
      callback(performance.now());
    }, TICK_MS));
    return id;
  };
  window.cancelAnimationFrame = (id) => {
    if (timers.has(id)) {
      clearTimeout(timers.get(id));
      timers.delete(id);
    } else {
      cancelFrame(id);
    }
  };
})();
