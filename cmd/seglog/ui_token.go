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

// uiAccess is seglog ui's --token, --token-file and --insecure
// (docs/security.md, "seglog ui"): the page shows every record of the
// store, so on an address other than loopback it is served only to a
// caller presenting the token, or to anyone with --insecure.
type uiAccess struct {
	token, tokenFile string
	insecure         bool
}

// maxTokenFile bounds what --token-file reads: a token is a line, and a
// path given by mistake (a segment, /dev/zero) must not be read whole.
const maxTokenFile = 4 << 10

// uiTokenCookie carries the token after a browser opened the printed URL.
const uiTokenCookie = "seglog_ui_token"

func (a *uiAccess) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&a.token, "token", "", "require this token on every request (Authorization: Bearer TOKEN, or ?token= once in a browser); needed on a non-loopback --listen")
	f.StringVar(&a.tokenFile, "token-file", "", "read the token from this file's first line instead of --token (keeps it out of the process list)")
	f.BoolVar(&a.insecure, "insecure", false, "serve a non-loopback --listen address without a token: anyone who reaches it reads the store (a warning is printed)")
	cmd.MarkFlagsMutuallyExclusive("token", "token-file")
}

// check returns the token every request must carry ("" for none), and
// whether serving without one needs the --insecure warning. It runs
// before the listener is bound: a refusal opens nothing.
func (a *uiAccess) check(cmd *cobra.Command, listen string) (token string, warn bool, err error) {
	token = a.token
	if a.tokenFile != "" {
		data, err := vfs.ReadFileLimit(vfs.Default, a.tokenFile, maxTokenFile)
		if err != nil {
			return "", false, usageErrorf(cmd, "--token-file: %v", err)
		}
		token, _, _ = strings.Cut(string(data), "\n")
		token = strings.TrimSpace(token)
		if token == "" {
			return "", false, usageErrorf(cmd, "--token-file %s: no token on its first line", a.tokenFile)
		}
	} else if cmd.Flags().Changed("token") && strings.TrimSpace(token) == "" {
		return "", false, usageErrorf(cmd, "--token is empty")
	}
	// An empty host is every interface; a name other than localhost is
	// taken as reachable from elsewhere, as serve takes it.
	if host, _, _ := net.SplitHostPort(listen); token == "" && !isLoopback(host) {
		if !a.insecure {
			return "", false, usageErrorf(cmd, "--listen %s is not a loopback address: the UI shows every record of the store, so serving it needs --token TOKEN or --token-file FILE, or --insecure to serve it to anyone (docs/security.md)", listen)
		}
		warn = true
	}
	return token, warn, nil
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
	w.Header().Set("WWW-Authenticate", `Bearer realm="seglog ui"`)
	http.Error(w, "seglog ui: a token is needed: open the URL seglog ui printed, or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
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
