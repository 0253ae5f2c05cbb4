package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/store"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	in := request{Op: opCreate, Broker: 2, Topic: "t", Partitions: 3, ReplicationFactor: -1, Configs: map[string]string{"a": "b"}, TimeoutMs: 10}
	if err := writeFrame(&buf, in); err != nil {
		t.Fatal(err)
	}
	var out request
	if err := readFrame(&buf, &out); err != nil || out.Topic != "t" || out.Partitions != 3 || out.ReplicationFactor != -1 || out.Configs["a"] != "b" {
		t.Fatalf("round trip: %+v, %v", out, err)
	}

	// A length over the limit is refused before anything of that size
	// is allocated or read.
	huge := binary.BigEndian.AppendUint32(nil, maxFrame+1)
	if err := readFrame(bytes.NewReader(huge), &out); !errors.Is(err, ErrProtocol) {
		t.Errorf("oversize frame: %v, want ErrProtocol", err)
	}
	garbage := append(binary.BigEndian.AppendUint32(nil, 3), "{{{"...)
	if err := readFrame(bytes.NewReader(garbage), &out); !errors.Is(err, ErrProtocol) {
		t.Errorf("undecodable frame: %v, want ErrProtocol", err)
	}
	short := append(binary.BigEndian.AppendUint32(nil, 10), "{}"...)
	if err := readFrame(bytes.NewReader(short), &out); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v, want io.ErrUnexpectedEOF", err)
	}
}

// Errors cross the wire as the sentinels the controller's matched.
func TestErrorCodes(t *testing.T) {
	for _, c := range errCodes {
		err := errResponse(fmt.Errorf("wrapped: %w", c.err)).err()
		if !errors.Is(err, c.err) {
			t.Errorf("%s: %v does not match %v", c.code, err, c.err)
		}
	}
	if err := errResponse(&meta.NotControllerError{Leader: 2}).err(); !errors.Is(err, meta.ErrNotController) {
		t.Errorf("NotControllerError: %v", err)
	}
	if err := errResponse(errors.New("disk on fire")).err(); !errors.Is(err, ErrRemote) {
		t.Errorf("an error with no code: %v, want ErrRemote", err)
	}
	if err := (response{}).err(); err != nil {
		t.Errorf("success: %v", err)
	}
	// A message that begins with the sentinel's text says it once.
	err := errResponse(fmt.Errorf("%w: segment.bytes too small", store.ErrInvalidConfig)).err()
	if want := store.ErrInvalidConfig.Error() + " (from the controller): segment.bytes too small"; !errors.Is(err, store.ErrInvalidConfig) || err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}

// A peer that breaks the protocol loses its connection; the controller
// goes on serving the others.
func TestHostilePeer(t *testing.T) {
	c := newCluster(t, 3)
	ctrl := c.controller()
	f := c.follower(ctrl)
	for _, payload := range [][]byte{
		binary.BigEndian.AppendUint32(nil, 1<<31),
		append(binary.BigEndian.AppendUint32(nil, 2), "no"...),
	} {
		conn, err := f.node.fwd.Dial(raft.ServerAddress(c.voters[ctrl.id]), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(payload); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Error("the controller answered a broken frame")
		}
		conn.Close()
	}
	if err := f.node.CreateTopic(ctxTimeout(t), "after-garbage", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Partitions("after-garbage"); err != nil {
		t.Error(err)
	}
}
