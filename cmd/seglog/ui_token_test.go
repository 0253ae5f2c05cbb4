package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strings"
	"testing"
)

// TestUITokenFlagsRefused: a non-loopback --listen without a token, and
// a token that is empty or unreadable, are usage errors before anything
// is bound or made.
func TestUITokenFlagsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "1")
	files := t.TempDir()
	empty := filepath.Join(files, "empty")
	writeVFS(t, empty, []byte("\n  \n"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ui", dir, "--listen", "0.0.0.0:0"}, "--token"},
		{[]string{"ui", dir, "--listen", ":0"}, "--insecure"},
		{[]string{"ui", "--playground", "--listen", "0.0.0.0:0"}, "--token"},
		{[]string{"ui", dir, "--listen", "0.0.0.0:0", "--token", ""}, "empty"},
		{[]string{"ui", dir, "--listen", "0.0.0.0:0", "--token-file", filepath.Join(files, "missing")}, "missing"},
		{[]string{"ui", dir, "--listen", "0.0.0.0:0", "--token-file", empty}, "no token"},
		{[]string{"ui", dir, "--token", "a", "--token-file", empty}, "token-file"},
	} {
		r := invoke(t, "", c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("seglog %v: exit %d, stdout %q, stderr %q; want a usage error naming %q", c.args, r.code, r.stdout, r.stderr, c.want)
		}
	}
}

// TestUIAccessCheck: which addresses need a token, what --token-file
// reads, and that --insecure is what lets a non-loopback address go
// without one, with a warning.
func TestUIAccessCheck(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	writeVFS(t, file, []byte("  from-file \nsecond line\n"))
	for _, c := range []struct {
		args      []string
		ok        bool
		token     string
		warnStart bool
	}{
		{[]string{"--listen", "127.0.0.1:0"}, true, "", false},
		{[]string{"--listen", "[::1]:0"}, true, "", false},
		{[]string{"--listen", "localhost:0"}, true, "", false},
		{[]string{"--listen", "127.0.0.1:0", "--token", "t"}, true, "t", false},
		{[]string{"--listen", "0.0.0.0:0"}, false, "", false},
		{[]string{"--listen", "example.com:80"}, false, "", false},
		{[]string{"--listen", "0.0.0.0:0", "--token", "t"}, true, "t", false},
		{[]string{"--listen", "0.0.0.0:0", "--token-file", file}, true, "from-file", false},
		{[]string{"--listen", "0.0.0.0:0", "--insecure"}, true, "", true},
		{[]string{"--listen", "0.0.0.0:0", "--insecure", "--token", "t"}, true, "t", false},
	} {
		cmd := newUICmd()
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		a := uiAccess()
		a.token, _ = cmd.Flags().GetString("token")
		a.tokenFile, _ = cmd.Flags().GetString("token-file")
		a.insecure, _ = cmd.Flags().GetBool("insecure")
		listen, _ := cmd.Flags().GetString("listen")
		token, warn, err := a.check(cmd, listen)
		if (err == nil) != c.ok || token != c.token || warn != c.warnStart {
			t.Errorf("%v: check = %q, %v, %v; want ok %v, token %q, warn %v", c.args, token, warn, err, c.ok, c.token, c.warnStart)
		}
	}
	var logs lockedBuffer
	warnInsecure(slog.New(slog.NewTextHandler(&logs, nil)), "0.0.0.0:8080")
	if !strings.Contains(logs.String(), "--insecure") || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("the --insecure warning: %q", logs.String())
	}
}

// TestUIToken: with a token, every request without it, or with a wrong
// one, is refused with 401, the page, the API and /metrics alike; the
// bearer header, and the cookie the printed URL sets, let it through.
func TestUIToken(t *testing.T) {
	const token = "s3cret-token"
	dir := filepath.Join(t.TempDir(), "data")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "1")
	base, printed, stop := startUIToken(t, dir, token)
	defer stop()
	if printed != base+"/?token="+token {
		t.Fatalf("seglog ui printed %q", printed)
	}

	status := func(path string, set func(*http.Request)) int {
		t.Helper()
		req, err := http.NewRequest("GET", base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if set != nil {
			set(req)
		}
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	cookie := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: uiTokenCookie, Value: tok}) }
	}
	for _, path := range []string{"/", "/api/state", "/metrics"} {
		for what, set := range map[string]func(*http.Request){
			"no token":       nil,
			"a wrong token":  bearer("s3cret-tokeN"),
			"a prefix":       bearer("s3cret"),
			"a wrong cookie": cookie("guess"),
			"basic auth":     func(r *http.Request) { r.SetBasicAuth("x", token) },
		} {
			if got := status(path, set); got != http.StatusUnauthorized {
				t.Errorf("GET %s with %s: %d, want 401", path, what, got)
			}
		}
		if got := status(path+"?token=guess", nil); got != http.StatusUnauthorized {
			t.Errorf("GET %s?token=guess: %d, want 401", path, got)
		}
		if got := status(path, bearer(token)); got != http.StatusOK {
			t.Errorf("GET %s with the bearer token: %d, want 200", path, got)
		}
		if got := status(path, cookie(token)); got != http.StatusOK {
			t.Errorf("GET %s with the cookie: %d, want 200", path, got)
		}
	}

	// The printed URL sets an HttpOnly, SameSite=Strict cookie and sends
	// the browser to the same page without the token.
	res, err := noRedirects.Get(printed)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/" {
		t.Errorf("GET the printed URL: %d to %q, want 303 to /", res.StatusCode, loc)
	}
	cookies := res.Cookies()
	if len(cookies) != 1 || cookies[0].Name != uiTokenCookie || cookies[0].Value != token ||
		!cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("GET the printed URL set cookies %+v", cookies)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar}
	for _, url := range []string{printed, base + "/api/state", base + "/metrics"} {
		res, err := browser.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || strings.Contains(res.Request.URL.String(), token) {
			t.Errorf("a browser's GET %s: %d at %s, want 200 without the token in the URL", url, res.StatusCode, res.Request.URL)
		}
	}
}

// noRedirects returns redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
