package ui

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

//go:embed static
var static embed.FS

// Options configures a Server. The zero value is usable.
type Options struct {
	// Clock gives the time the retention boundary is judged at; nil means
	// seglog.RealClock. A Playground passes its simulated clock.
	Clock seglog.Clock
	// FS is the filesystem segment files are read from to show their
	// batches (the store's); nil means the real one.
	FS vfs.FS
	// Logger receives request failures (default slog.Default()).
	Logger *slog.Logger
	// Cluster, if set, is called for every state the page draws: a
	// cluster node's replicas, leaders and ISR as the caller knows them
	// (seglog ui reads the node's record). An error is shown on the page
	// in place of the view. nil for a single node's store: the page shows
	// no replication.
	Cluster func() (Cluster, error)
}

// Cluster is a cluster node's view of its partitions' replication.
type Cluster struct {
	// About says whose view it is and as of when; the page shows it.
	About string
	// Topics maps each topic to its partitions' replication, indexed by
	// partition.
	Topics map[string][]Replication
}

// Replication is one partition's replication in a cluster.
type Replication struct {
	// Leader is the leader's node id and Epoch its leader epoch, both -1
	// when no leader is known.
	Leader int32 `json:"leader"`
	Epoch  int32 `json:"epoch"`
	// Replicas are the partition's replicas, from the metadata; ISR those
	// the leader sees as caught up.
	Replicas []int32 `json:"replicas"`
	ISR      []int32 `json:"isr"`
}

// Server is the http.Handler of the UI for one store: the page, its
// assets and a JSON API under /api/. It only reads the store; the
// playground's actions are added by a Playground.
type Server struct {
	st   *store.Store
	opts Options
	mux  *http.ServeMux
	play *Playground
	// viewMu is held for writing by Refresh and for reading while a
	// request uses the store's Logs (view).
	viewMu  sync.RWMutex
	firstTS firstTimestamps
}

// New returns a Server showing st, which should be opened with
// store.Options.ReadOnly unless it is the caller's own (a playground's):
// then the UI takes no lock and writes nothing, and each request first
// calls st.Refresh to see what the store's writer did.
func New(st *store.Store, opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = seglog.RealClock
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{st: st, opts: opts, mux: http.NewServeMux()}
	s.firstTS.init()
	assets, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	s.mux.Handle("GET /", noCache(http.FileServerFS(assets)))
	s.mux.HandleFunc("GET /api/state", s.handleState)
	s.mux.HandleFunc("GET /api/topics", s.handleTopics)
	s.mux.HandleFunc("GET /api/topics/{topic}", s.handleTopic)
	s.mux.HandleFunc("GET /api/groups", s.handleGroups)
	s.mux.HandleFunc("GET /api/segment", s.handleSegment)
	s.mux.HandleFunc("GET /api/records", s.handleRecords)
	return s
}

// ServeHTTP serves the page and the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The page loads nothing from elsewhere; the policy makes a mistake
	// that would (a font, a CDN script) fail loudly in the browser test.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// view brings a read-only store up to date with its writer and holds it
// there until release: the store's Refresh may close and reopen a
// partition's Log, so a request must not use a Log across someone else's
// Refresh. (A writable store is always current; its Refresh does
// nothing.) A writer deleting files while Refresh looks can make it fail;
// the next try sees the new state, so a few are made.
func (s *Server) view() (release func(), err error) {
	s.viewMu.Lock()
	for range refreshTries {
		if err = s.st.Refresh(); err == nil {
			break
		}
	}
	s.viewMu.Unlock()
	if err != nil {
		return func() {}, fmt.Errorf("%w: %w", errRefresh, err)
	}
	s.viewMu.RLock()
	return s.viewMu.RUnlock, nil
}

const refreshTries = 3

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		// The client went away; nothing to tell it.
		return
	}
}

// apiError is the body of every failed API call.
type apiError struct {
	Error string `json:"error"`
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errRefresh):
		code = http.StatusServiceUnavailable
	case errors.Is(err, store.ErrUnknownTopic), errors.Is(err, store.ErrUnknownPartition),
		errors.Is(err, store.ErrUnknownGroup), errors.Is(err, errNoSegment), errors.Is(err, fs.ErrNotExist):
		code = http.StatusNotFound
	case errors.Is(err, errBadRequest), errors.Is(err, store.ErrInvalidGroup),
		errors.Is(err, store.ErrInternalTopic), errors.Is(err, store.ErrInvalidTopic):
		code = http.StatusBadRequest
	}
	if code == http.StatusInternalServerError {
		s.opts.Logger.Error("ui: request failed", "path", r.URL.Path, "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(apiError{Error: err.Error()})
}

var (
	errBadRequest = errors.New("ui: bad request")
	errNoSegment  = errors.New("ui: no such segment (retention may have removed it)")
	errRefresh    = errors.New("ui: cannot refresh the store's view now (a writer is changing it); try again")
)
