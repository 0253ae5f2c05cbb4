package ui

import (
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

//go:embed static
var static embed.FS

// Options configures a Server. The zero value is usable.
type Options struct {
	// Now is the time the retention boundary is judged at; nil means
	// time.Now. A Playground passes its simulated clock.
	Now func() time.Time
	// FS is the filesystem segment files are read from to show their
	// batches (the store's); nil means the real one.
	FS vfs.FS
	// Logger receives request failures (default slog.Default()).
	Logger *slog.Logger
}

// Server is the http.Handler of the UI for one store: the page, its
// assets and a JSON API under /api/. It only reads the store; the
// playground's actions are added by a Playground.
type Server struct {
	st   *store.Store
	opts Options
	mux  *http.ServeMux
	play *Playground
	// refreshMu serializes the read-only store's Refresh, which the
	// snapshot handlers call before reading.
	refreshMu sync.Mutex
	firstTS   firstTimestamps
}

// refresher is a store opened read-only: Refresh picks up what a writer
// appended, created or deleted since.
type refresher interface{ Refresh() error }

// New returns a Server showing st.
func New(st *store.Store, opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
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

// refresh brings a read-only store up to date; a writable one is always
// current.
func (s *Server) refresh() error {
	rs, ok := any(s.st).(refresher)
	if !ok {
		return nil
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	return rs.Refresh()
}

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
)
