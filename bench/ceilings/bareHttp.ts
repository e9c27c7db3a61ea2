// A ceiling of `npm run bench`: the physical limit of one Node process on this machine — node:http
// reading the request and answering a fixed JSON body, nothing else. Run as a child process of its
// own (PORT); prints `ready` once it listens.
import http from 'node:http';

const BODY = JSON.stringify({ data: { __typename: 'Query' } });
const HEADERS = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(BODY) };

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, HEADERS);
    res.end(BODY);
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('ready'));
process.on('SIGTERM', () => process.exit(0));
server.on('error', (error) => {
  console.error(error);
  process.exit(1);
});
