package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/vfs"
)

// tokenAccess is the token an HTTP listener of seglog's requires off
// loopback (docs/security.md): seglog ui's --token, --token-file and
// --insecure, and seglog serve's --metrics-token and --metrics-token-file
// (with serve's --insecure). The UI shows every record of the store and
// the metrics page every topic and group, so on an address other than
// loopback either is served only to a caller presenting the token, or to
// anyone with --insecure.
type tokenAccess struct {
	token, tokenFile string
	insecure         bool
	// flag names the token's flag ("token", "metrics-token"; the file's
	// is flag + "-file"), listenFlag the address's, and shows says what
	// an open listener would give away, for the refusal.
	flag, listenFlag, shows string
}

// uiAccess is seglog ui's.
func uiAccess() *tokenAccess {
	return &tokenAccess{flag: "token", listenFlag: "listen", shows: "the UI shows every record of the store"}
}

// metricsAccess is seglog serve's for --metrics-listen.
func metricsAccess() *tokenAccess {
	return &tokenAccess{flag: "metrics-token", listenFlag: "metrics-listen",
		shows: "the metrics page names every topic, partition and group (and --pprof profiles the process)"}
}

// maxTokenFile bounds what --token-file reads: a token is a line, and a
// path given by mistake (a segment, /dev/zero) must not be read whole.
const maxTokenFile = 4 << 10

// uiTokenCookie carries the token after a browser opened the printed URL.
const uiTokenCookie = "seglog_ui_token"

// flags declares the token flags on cmd, and --insecure when the command
// has none of its own yet.
func (a *tokenAccess) flags(cmd *cobra.Command, withInsecure bool) {
	f := cmd.Flags()
	f.StringVar(&a.token, a.flag, "", fmt.Sprintf("require this token on every request (Authorization: Bearer TOKEN, or ?token= once in a browser); needed on a non-loopback --%s", a.listenFlag))
	f.StringVar(&a.tokenFile, a.flag+"-file", "", fmt.Sprintf("read the token from this file's first line instead of --%s (keeps it out of the process list)", a.flag))
	if withInsecure {
		f.BoolVar(&a.insecure, "insecure", false, fmt.Sprintf("serve a non-loopback --%s address without a token: anyone who reaches it reads the store (a warning is printed)", a.listenFlag))
	}
	cmd.MarkFlagsMutuallyExclusive(a.flag, a.flag+"-file")
}

// check returns the token every request must carry ("" for none), and
// whether serving without one needs the --insecure warning. It runs
// before the listener is bound: a refusal opens nothing.
func (a *tokenAccess) check(cmd *cobra.Command, listen string) (token string, warn bool, err error) {
	token = a.token
	if a.tokenFile != "" {
		data, err := vfs.ReadFileLimit(vfs.Default, a.tokenFile, maxTokenFile)
		if err != nil {
			return "", false, usageErrorf(cmd, "--%s-file: %v", a.flag, err)
		}
		token, _, _ = strings.Cut(string(data), "\n")
		token = strings.TrimSpace(token)
		if token == "" {
			return "", false, usageErrorf(cmd, "--%s-file %s: no token on its first line", a.flag, a.tokenFile)
		}
	} else if cmd.Flags().Changed(a.flag) && strings.TrimSpace(token) == "" {
		return "", false, usageErrorf(cmd, "--%s is empty", a.flag)
	}
	// An empty host is every interface; a name other than localhost is
	// taken as reachable from elsewhere, as serve takes it.
	if host, _, _ := net.SplitHostPort(listen); token == "" && !isLoopback(host) {
		if !a.insecure {
			return "", false, usageErrorf(cmd, "--%s %s is not a loopback address: %s, so serving it needs --%s TOKEN or --%s-file FILE, or --insecure to serve it to anyone (docs/security.md)", a.listenFlag, listen, a.shows, a.flag, a.flag)
		}
		warn = true
	}
	return token, warn, nil
}

// guard wraps the handler of a listener on addr: the token when there is
// one, and on loopback the refusal of other host names.
func guard(h http.Handler, addr net.Addr, token string) http.Handler {
	if token != "" {
		h = requireToken(h, token)
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil && isLoopback(host) {
		h = loopbackHostOnly(h)
	}
	return h
}

// warnInsecure says, at start, that the UI is open to anyone.
func warnInsecure(logger *slog.Logger, listen string) {
	logger.Warn("seglog ui: --insecure: serving a non-loopback address without a token; anyone who reaches it can read every record of the store", "listen", listen)
}

// requireToken serves only requests carrying token: as a bearer token
// (scrapers of /metrics, scripts), in the cookie, or as ?token=, which
// sets the cookie and, for a GET, redirects to the same URL without it,
// so the printed URL opens the page and the token leaves the address
// bar. The comparison takes the same time whatever the guess: digests
// are compared, since subtle.ConstantTimeCompare returns at once on
// inputs of different lengths and would tell the token's length.
func requireToken(h http.Handler, token string) http.Handler {
	want := sha256.Sum256([]byte(token))
	match := func(got string) bool {
		sum := sha256.Sum256([]byte(got))
		return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && match(auth) {
			h.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		if q.Has("token") {
			if !match(q.Get("token")) {
				unauthorized(w)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: uiTokenCookie, Value: token, Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode})
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				q.Del("token")
				u := *r.URL
				u.RawQuery = q.Encode()
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
				return
			}
			h.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(uiTokenCookie); err == nil && match(c.Value) {
			h.ServeHTTP(w, r)
			return
		}
		unauthorized(w)
	})
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="seglog"`)
	http.Error(w, "seglog: a token is needed: send Authorization: Bearer TOKEN (or open the URL seglog ui printed)", http.StatusUnauthorized)
}

// uiURL is the address seglog ui prints: with the token when there is
// one, so that opening it in a browser logs in.
func uiURL(ln net.Listener, token string) string {
	u := fmt.Sprintf("http://%s/", ln.Addr())
	if token != "" {
		u += "?token=" + url.QueryEscape(token)
	}
	return u
}
