// GraphiQL for browsers at GET /graphql, entirely from node_modules (graphiql@3's UMD bundle with
// React 18's UMD builds): it works on a closed network, unlike Apollo's landing page or the classic
// Playground, which load from CDNs. The Authorization header is set in GraphiQL's header editor;
// outside production the start-up message links to `/graphql#admin-key=...`, which this page turns
// into that header (the fragment never reaches the server) and then drops from the address bar.
import path from 'node:path';
import express, { type Router } from 'express';

const asset = (pkg: string, file: string) => path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file);

export function graphiqlAssets(): Router {
  const router = express.Router();
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

export const GRAPHIQL_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>Tessera — GraphiQL</title>
  <link rel="stylesheet" href="/graphiql/graphiql.css" />
  <style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
  <div id="graphiql">Loading GraphiQL…</div>
  <script src="/graphiql/react.js"></script>
  <script src="/graphiql/react-dom.js"></script>
  <script src="/graphiql/graphiql.js"></script>
  <script>
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
  </script>
</body>
</html>
`;
