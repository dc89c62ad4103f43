package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// client sends the benchmark's requests over keep-alive connections.
// It keeps enough idle ones for every concurrent client and does not compress.
type client struct {
	http  *http.Client
	token string
}

func newClient(token string) *client {
	tr := &http.Transport{
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &client{http: &http.Client{Transport: tr}, token: token}
}

// statusError is a response other than 200.
type statusError struct {
	url    string
	status int
	body   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("POST %s: status %d: %s", e.url, e.status, e.body)
}

// post sends body to url with the token and returns the response body if
// the status is 200.
func (c *client) post(ctx context.Context, url string, body []byte, keep bool) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &statusError{url, resp.StatusCode, strings.TrimSpace(string(msg))}
	}
	if !keep { // the body is read to EOF and dropped
		_, err = io.Copy(io.Discard, resp.Body)
		return nil, err
	}
	return io.ReadAll(resp.Body)
}

// postJSON posts body and decodes the response into out.
func (c *client) postJSON(ctx context.Context, url string, body []byte, out any) error {
	b, err := c.post(ctx, url, body, true)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("POST %s: response: %w", url, err)
	}
	return nil
}

// health polls GET /healthz every millisecond until a 200 and returns
// the position it reports.
func (c *client) health(ctx context.Context, base string) (int64, error) {
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if err != nil {
			return 0, err
		}
		resp, err := c.http.Do(req)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && rerr == nil {
				var h struct {
					Position int64 `json:"position"`
				}
				if err := json.Unmarshal(b, &h); err != nil {
					return 0, fmt.Errorf("GET /healthz: %w", err)
				}
				return h.Position, nil
			}
			last = fmt.Errorf("status %d: %s", resp.StatusCode, b)
		} else {
			last = err
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		time.Sleep(time.Millisecond)
	}
	return 0, errors.Join(errors.New("GET /healthz: no 200 within a minute"), last)
}

// getJSON gets url with the token and decodes a 200's body into out.
func (c *client) getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("GET %s: response: %w", url, err)
	}
	return nil
}
