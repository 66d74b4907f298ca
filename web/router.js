// The page's routes, kept in the address's hash so the folder works on any static host and from any
// sub-path:
//
//   #/                          the home view (the three layers, the five exercises, progress)
//   #/exercise/2?variant=17     one exercise, at one variant
//   #/playground?/autoscaler/strategy=queue_depth&…   the playground, its knobs as JSON paths
//   #/scheduler?preset=7-of-8&scheduler=default-scheduler   one scheduling cycle over a snapshot
//   #/plan?/topology/max_nodes=4&…   the plan designer, its input as JSON paths (opening it designs the plan)
//
// Links of the page before routes (#seed=3, #/autoscaler/strategy=…&seed=3) are read as the route
// they meant: a seed alone opens exercise 1 at that variant, knob paths open the playground.
// Moving between views adds a history entry (back and forward work); a view rewriting its own
// parameters (a knob moved) replaces the entry instead.

/** The event fired on window after the route changed, whoever changed it. */
export const ROUTE_EVENT = 'gpuscale:route';

/** The views of the page: home, exercise N, playground, scheduler, plan designer. */
export const VIEWS = ['home', 'exercise', 'playground', 'scheduler', 'plan'];

// The views whose route is their name alone ("#/scheduler"), with parameters after "?".
const NAMED_VIEWS = ['playground', 'scheduler', 'plan'];

/**
 * Reads a hash ("#/exercise/2?variant=17") into {view, exercise, params, unknown?}. `unknown` is
 * the text of a route the page has no view for (the home view is shown instead).
 */
export function parseRoute(hash = location.hash) {
  const text = String(hash ?? '').replace(/^#/, '');
  if (!text.startsWith('/') || /^\/[^?]*=/.test(text)) return legacyRoute(text);
  const q = text.indexOf('?');
  const path = (q < 0 ? text : text.slice(0, q)).replace(/\/+$/, '');
  const params = new URLSearchParams(q < 0 ? '' : text.slice(q + 1));
  if (path === '' || path === '/home') return { view: 'home', exercise: null, params };
  if (NAMED_VIEWS.includes(path.slice(1))) return { view: path.slice(1), exercise: null, params };
  const exercise = /^\/exercise\/(\d{1,2})$/.exec(path);
  if (exercise) return { view: 'exercise', exercise: Number(exercise[1]), params };
  return { view: 'home', exercise: null, params: new URLSearchParams(), unknown: text };
}

/** "#seed=3" and "#/autoscaler/strategy=x&seed=3": the page's addresses before it had routes. */
function legacyRoute(text) {
  const params = new URLSearchParams(text);
  const knobs = new URLSearchParams();
  for (const [key, value] of params) if (key.startsWith('/')) knobs.append(key, value);
  if ([...knobs.keys()].length) return { view: 'playground', exercise: null, params: knobs, legacy: true };
  if (params.has('seed')) {
    return { view: 'exercise', exercise: 1, params: new URLSearchParams({ variant: params.get('seed') }), legacy: true };
  }
  return { view: 'home', exercise: null, params: new URLSearchParams(), ...(text ? { unknown: text, legacy: true } : {}) };
}

/** The hash of a route: {view, exercise?, params?} → "#/exercise/2?variant=17". */
export function routeHash({ view, exercise = null, params = null }) {
  const path = view === 'exercise' ? `/exercise/${exercise}` : NAMED_VIEWS.includes(view) ? `/${view}` : '/';
  const entries = params ? [...new URLSearchParams(params).entries()] : [];
  const encode = (part) => encodeURIComponent(part).replace(/%2F/g, '/');  // knob paths stay readable
  const query = entries.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&');
  return `#${path}${query ? `?${query}` : ''}`;
}

/** The route's key for the view it shows: "home", "exercise/2", "playground", "scheduler", "plan". */
export function viewKey(route) {
  return route.view === 'exercise' ? `exercise/${route.exercise}` : route.view;
}

/**
 * Goes to a route. A new view pushes a history entry; `replace` rewrites the current one (the
 * same view with other parameters, or a correction of an address the page could not use).
 * Either way ROUTE_EVENT follows, once.
 */
export function go(route, { replace = false } = {}) {
  const hash = routeHash(route);
  const url = `${location.pathname}${location.search}${hash}`;
  if (replace) history.replaceState(history.state, '', url);
  else history.pushState(null, '', url);
  window.dispatchEvent(new CustomEvent(ROUTE_EVENT, { detail: { route: parseRoute(hash), replace } }));
}

/** Calls `handler(route)` whenever the route changes: go(), back/forward, or an edited address. */
export function onRouteChange(handler) {
  let last = location.hash;
  const fire = () => {
    last = location.hash;
    handler(parseRoute());
  };
  window.addEventListener(ROUTE_EVENT, fire);
  window.addEventListener('popstate', () => { if (location.hash !== last) fire(); });
  window.addEventListener('hashchange', () => { if (location.hash !== last) fire(); });
}

/**
 * Rewrites some parameters of the current route (value null or undefined deletes one) without a
 * history entry and without ROUTE_EVENT: the view that owns them made the change itself.
 */
export function updateParams(changes) {
  const route = parseRoute();
  const params = new URLSearchParams(route.params);
  for (const [key, value] of Object.entries(changes)) {
    if (value === null || value === undefined) params.delete(key);
    else params.set(key, String(value));
  }
  history.replaceState(history.state, '', `${location.pathname}${location.search}${routeHash({ ...route, params })}`);
}
