package ui

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"time"
)

// maxActionBody bounds a playground request's JSON body.
const maxActionBody = 64 << 10

// decodeAction reads a playground request's JSON body. It insists on the
// JSON content type: a page on another origin can only send one after a
// CORS preflight, which this server never grants, so it cannot act on
// the playground through the user's browser.
func decodeAction(w http.ResponseWriter, r *http.Request, v any) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return fmt.Errorf("%w: want Content-Type application/json", errBadRequest)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxActionBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return nil
}

// serveAction is what every playground endpoint does: decode the JSON
// body into a Req, run act on it, and answer with its result as JSON or
// with the error's status.
func serveAction[Req, Out any](p *Playground, w http.ResponseWriter, r *http.Request, act func(Req) (Out, error)) {
	var req Req
	if err := decodeAction(w, r, &req); err != nil {
		p.srv.fail(w, r, err)
		return
	}
	out, err := act(req)
	if err != nil {
		p.srv.fail(w, r, err)
		return
	}
	writeJSON(w, out)
}

// produceRequest is the body of POST /api/play/produce.
type produceRequest struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func (p *Playground) handleProduce(w http.ResponseWriter, r *http.Request) {
	serveAction(p, w, r, func(req produceRequest) (Produced, error) {
		return p.Produce(req.Key, req.Value)
	})
}

// consumeRequest is the body of POST /api/play/consume.
type consumeRequest struct {
	Group string `json:"group"`
	Max   int    `json:"max"`
}

func (p *Playground) handleConsume(w http.ResponseWriter, r *http.Request) {
	serveAction(p, w, r, func(req consumeRequest) (Consumed, error) {
		if err := playGroup(req.Group); err != nil {
			return Consumed{}, err
		}
		return p.Consume(req.Group, req.Max)
	})
}

// rewindRequest is the body of POST /api/play/rewind.
type rewindRequest struct {
	Group string `json:"group"`
	Rewind
}

func (p *Playground) handleRewind(w http.ResponseWriter, r *http.Request) {
	serveAction(p, w, r, func(req rewindRequest) (map[int32]int64, error) {
		if err := playGroup(req.Group); err != nil {
			return nil, err
		}
		return p.Rewind(req.Group, req.Rewind)
	})
}

// advanceRequest is the body of POST /api/play/advance.
type advanceRequest struct {
	Ms int64 `json:"ms"`
}

func (p *Playground) handleAdvance(w http.ResponseWriter, r *http.Request) {
	serveAction(p, w, r, func(req advanceRequest) (Advanced, error) {
		return p.Advance(r.Context(), time.Duration(req.Ms)*time.Millisecond)
	})
}

// playGroup keeps the page to the scenario's two groups.
func playGroup(g string) error {
	if g != GroupBilling && g != GroupAnalytics {
		return fmt.Errorf("%w: group %q: the playground has %s and %s", errBadRequest, g, GroupBilling, GroupAnalytics)
	}
	return nil
}
