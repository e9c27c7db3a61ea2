// esbuild bundles the stylesheets imported by main.ts into app.css.
declare module '*.css';
