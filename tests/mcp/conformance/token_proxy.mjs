// The conformance suite's client sends no Authorization header, and
// `chock mcp --http` answers nothing without its bearer token: this proxy on
// 127.0.0.1 adds the token to every request and passes everything else
// (Host and Origin too, which the suite's DNS rebinding scenario sets) both
// ways as it comes.
//   node token_proxy.mjs URL TOKEN   (prints its own URL on stdout)
import http from "node:http";

const [target, token] = process.argv.slice(2);
const upstream = new URL(target);
const proxy = http.createServer((req, res) => {
  const forward = http.request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, authorization: `Bearer ${token}` },
    },
    (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    },
  );
  forward.on("error", () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  // A client that leaves ends the request upstream too (an event stream it held).
  res.on("close", () => forward.destroy());
  req.pipe(forward);
});
proxy.listen(0, "127.0.0.1", () => console.log(`http://127.0.0.1:${proxy.address().port}${upstream.pathname}`));
