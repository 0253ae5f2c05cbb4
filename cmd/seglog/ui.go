package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/ui"
	"github.com/seglog/seglog/vfs"
)

func init() { register(newUICmd) }

func newUICmd() *cobra.Command {
	var listen string
	var playground bool
	access := uiAccess()
	cmd := &cobra.Command{
		Use:   "ui [DIR]",
		Short: "show a store in a browser: partitions, segments, offsets, groups and lag, retention (or --playground)",
		Long: `Serve a web page showing the store in DIR: each topic's partitions as logs of
segments drawn to scale, their start and end offsets, what the next
retention pass would delete, each consumer group's committed offset and
lag, and the batches and records of any segment. On a cluster node's DIR,
each partition's leader, replicas and ISR as the node last recorded them
(docs/cluster.md, "Tools"). The page updates live
while the store is written. The store is opened read-only: the UI takes no
lock and writes nothing, so it can run beside "seglog serve" or a program
that has the store open.

--playground serves a temporary store instead, with the bookings scenario
(12 partitions keyed by booking id, groups billing and analytics) and
buttons to produce, consume, rewind a group and move a simulated clock so
that retention trims segments. The temporary store is removed on exit.

The listener is bound before the store is opened or the playground's
directory made: a bad --listen is a usage error (exit status 2) and a port
in use exits 1, with nothing opened or made.

On a non-loopback --listen the page needs --token TOKEN (or --token-file
FILE): every request must carry it, as "Authorization: Bearer TOKEN" or,
in a browser, by opening the printed URL once (?token= sets a cookie).
Without one, such an address is a usage error unless --insecure, which
warns at start. On loopback no token is needed (docs/security.md).

The page is self-contained: no request leaves the server. docs/ui.md
explains each element.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if playground && len(args) != 0 {
				return errors.New("ui: --playground takes no DIR")
			}
			if !playground && len(args) != 1 {
				return errors.New("ui: give a store DIR, or --playground")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// The listener is bound before the store is opened or the
			// playground's directory made: a bad address or a busy port
			// leaves nothing behind.
			if err := checkListenAddress(cmd, "listen", listen); err != nil {
				return err
			}
			token, warn, err := access.check(cmd, listen)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("ui: %w", err)
			}
			defer ln.Close() // once served, already closed: the error is moot
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			if warn {
				warnInsecure(logger, listen)
			}
			if playground {
				return runPlayground(ctx, cmd.OutOrStdout(), ln, logger, token)
			}
			return runStoreUI(ctx, cmd.OutOrStdout(), args[0], ln, logger, token)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve on (host:port; port 0 picks a free one)")
	cmd.Flags().BoolVar(&playground, "playground", false, "serve a temporary store with the bookings scenario instead of DIR")
	access.flags(cmd, true)
	return cmd
}

// runStoreUI serves the store in dir on ln; token, if not empty, is
// needed by every request (requireToken).
func runStoreUI(ctx context.Context, out io.Writer, dir string, ln net.Listener, logger *slog.Logger, token string) error {
	// A cluster node's DIR shows its replicas, leaders and ISR from the
	// record the node keeps there; a damaged record fails here, before
	// anything is served.
	rv, err := readReplicaView(dir)
	if err != nil {
		return err
	}
	st, err := openStoreReadOnly(dir, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := ui.Options{Logger: logger}
	if rv.cluster {
		opts.Cluster = uiCluster(dir)
	}
	return serveUI(ctx, out, withMetricsPage(ui.New(st, opts)), ln, token, "store "+dir)
}

func runPlayground(ctx context.Context, out io.Writer, ln net.Listener, logger *slog.Logger, token string) (err error) {
	dir, err := makeTempDir(vfs.Default, "seglog-playground")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, vfs.RemoveAll(vfs.Default, dir)) }()
	p, err := ui.NewPlayground(dir, logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	return serveUI(ctx, out, withMetricsPage(p.Server()), ln, token, "playground (temporary store "+dir+")")
}

// serveUI serves h on ln until ctx ends, printing the URL first. With a
// token, every request must carry it, the page and /metrics alike.
func serveUI(ctx context.Context, out io.Writer, h http.Handler, ln net.Listener, token, what string) error {
	srv := &http.Server{Handler: guard(h, ln.Addr(), token), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "seglog ui: serving %s at %s (Ctrl-C to stop)\n", what, uiURL(ln, token))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHostOnly refuses requests naming another host when the server
// listens on loopback only: a web page whose name an attacker points at
// 127.0.0.1 (DNS rebinding) would otherwise read the store through the
// user's browser.
func loopbackHostOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		if !isLoopback(host) {
			http.Error(w, "seglog: Host "+r.Host+" refused: this server answers loopback names only", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
