/** The home page's style, shared by its confirm steps (homeAssignments.ts). */
export const homeStyle = `
  main { max-width: 46rem; margin: 6vh auto; }
  h2 { font-size: 1.05rem; margin: 1.75rem 0 .5rem; }
  h3 { font-size: 1.05rem; margin: 0; }
  ul.cards { list-style: none; padding: 0; margin: 0; display: grid; gap: .9rem; }
  ul.cards > li { border: 1px solid rgba(127,127,127,.3); border-radius: 10px; padding: 1rem 1.15rem; }
  .card-head { display: flex; flex-wrap: wrap; align-items: baseline; justify-content: space-between; gap: .5rem; }
  .card .actions { margin-top: .75rem; align-items: center; }
  .card form { margin: 0; }
  .state { font-size: .85rem; font-weight: 600; padding: .1rem .55rem; border-radius: 999px; border: 1px solid currentColor; }
  .state-ready { color: #1a7f37; } .state-starting { color: #9a6700; } .state-stopped { color: var(--muted); } .state-failed { color: #cf222e; }
  @media (prefers-color-scheme: dark) { .state-ready { color: #3fb950; } .state-starting { color: #d29922; } .state-failed { color: #f85149; } }
  button.secondary { background: transparent; color: var(--accent); }
  a { color: var(--accent); }
  .message:empty { display: none; }
  dl.receipt { display: grid; grid-template-columns: max-content 1fr; gap: .2rem .9rem; margin: .5rem 0 0; }
  dl.receipt dt { font-weight: 600; } dl.receipt dd { margin: 0; }
  code.hash { word-break: break-all; font-size: .85rem; }
  a:focus-visible, button:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
  ul.visits { padding-left: 1.2rem; } li.visit { margin: .3rem 0; }
  li.visit-request { list-style: none; margin-left: -1.2rem; padding: .6rem .9rem; border-radius: 8px; border: 2px solid var(--accent); display: flex; flex-wrap: wrap; gap: .75rem; align-items: center; justify-content: space-between; }
  li.visit-request form { margin: 0; }
  li.visit-live { list-style: none; margin-left: -1.2rem; padding: .6rem .9rem; border-radius: 8px; border: 2px solid #9a6700; }
  ul.exams { list-style: none; padding: 0; margin: 1rem 0; display: grid; gap: .6rem; }
  li.exam { padding: .6rem .9rem; border-radius: 8px; border: 2px solid var(--accent); }
  li.exam-running { border-color: #9a6700; }
`;
