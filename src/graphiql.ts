// GraphiQL for browsers at GET /graphql, entirely from node_modules (graphiql@3's UMD bundle with
// React 18's UMD builds): it works on a closed network, unlike Apollo's landing page or the classic
// Playground, which load from CDNs. The Authorization header is set in GraphiQL's header editor;
// outside production the start-up message links to `/graphql#admin-key=...`, which this page turns
// into that header (the fragment never reaches the server) and then drops from the address bar.
//
// Served under a strict Content-Security-Policy (src/securityHeaders.ts): scripts only from
// /graphiql and the page's one inline script, allowed by its SHA-256 computed at start-up. Styles
// from /graphiql and <style> elements carrying the page's nonce: the page's own, and those GraphiQL's
// dialogs add while open (react-remove-scroll-bar, which takes the nonce from `__webpack_nonce__`;
// they hold the scrollbar's measured width, so no fixed hash could allow them).
import path from 'node:path';
import express, { type RequestHandler, type Router } from 'express';
import { cspHash, securityHeaders, type PagePolicy } from './securityHeaders';

const asset = (pkg: string, file: string) => path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file);

/** The page's one inline script. Its text is fixed (the nonce is read from the <style> element). */
const GRAPHIQL_SCRIPT = `
    window.__webpack_nonce__ = document.getElementById('graphiql-style').nonce;
    const match = /admin-key=([^&]+)/.exec(location.hash);
    if (match) {
      sessionStorage.setItem('tessera-key', decodeURIComponent(match[1]));
      history.replaceState(null, '', location.pathname);
    }
    const key = sessionStorage.getItem('tessera-key') || '<your API key>';
    const fetcher = GraphiQL.createFetcher({ url: '/graphql' });
    ReactDOM.createRoot(document.getElementById('graphiql')).render(
      React.createElement(GraphiQL, {
        fetcher,
        defaultHeaders: JSON.stringify({ Authorization: 'Bearer ' + key }, null, 2),
        shouldPersistHeaders: false,
        defaultQuery: '{\\n  campaigns(first: 10) {\\n    edges { node { id name status stats { total allocated available fillRate } } }\\n  }\\n}\\n',
      }),
    );
  `;

/** GraphiQL's policy: its files, its inline script by hash, and <style> elements by the page's nonce. */
export const GRAPHIQL_POLICY: PagePolicy = { inlineScripts: [cspHash(GRAPHIQL_SCRIPT)], styleNonce: true };

/** The page, for the nonce its Content-Security-Policy names (a fresh one per response). */
export function graphiqlHtml(styleNonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>Tessera — GraphiQL</title>
  <link rel="stylesheet" href="/graphiql/graphiql.css" />
  <style id="graphiql-style" nonce="${styleNonce}">html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
  <div id="graphiql">Loading GraphiQL…</div>
  <script src="/graphiql/react.js"></script>
  <script src="/graphiql/react-dom.js"></script>
  <script src="/graphiql/graphiql.js"></script>
  <script>${GRAPHIQL_SCRIPT}</script>
</body>
</html>
`;
}

/** GET /graphql from a browser (one that prefers HTML to JSON): the GraphiQL page. */
export function graphiqlPage(): RequestHandler {
  const headers = securityHeaders(GRAPHIQL_POLICY);
  return (req, res, next) => {
    if (req.accepts(['application/json', 'text/html']) !== 'text/html') {
      next();
      return;
    }
    headers(req, res, () => {
      // A page with a nonce of its own is never stored, nor served again from a cache.
      res.setHeader('Cache-Control', 'no-store');
      res.type('html').send(graphiqlHtml(res.locals.cspNonce as string));
    });
  };
}

/** The files GraphiQL's page loads, under the same headers. */
export function graphiqlAssets(): Router {
  const router = express.Router();
  router.use(securityHeaders(GRAPHIQL_POLICY));
  const files: Record<string, string> = {
    'react.js': asset('react', 'umd/react.production.min.js'),
    'react-dom.js': asset('react-dom', 'umd/react-dom.production.min.js'),
    'graphiql.js': asset('graphiql', 'graphiql.min.js'),
    'graphiql.css': asset('graphiql', 'graphiql.min.css'),
  };
  for (const [name, file] of Object.entries(files)) {
    router.get(`/${name}`, (_req, res) => res.sendFile(file, { maxAge: '1h' }));
  }
  return router;
}
