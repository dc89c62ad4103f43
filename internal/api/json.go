package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// encode writes v as JSON with the status. An encoding error can only be
// logged by the caller's middleware: the header is already sent.
func encode(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"code":"internal","message":"internal error","details":{}}}`+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// maxJSONDepth bounds the nesting of request bodies.
const maxJSONDepth = 100

// decode reads the request body as exactly one JSON value into v,
// refusing a wrong content type, invalid UTF-8, duplicate object keys,
// nesting deeper than maxJSONDepth, numbers out of range, unknown fields
// and trailing data.
func decode(r *http.Request, v any) error {
	if err := checkJSONContentType(r); err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	if err := checkJSON(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return httpErr(errBadRequest, "the request body has data after its JSON value")
	}
	return nil
}

// checkJSON refuses what encoding/json would accept silently: invalid
// UTF-8 (it would become U+FFFD), duplicate keys (the last would win),
// deep nesting and numbers past the float64 range (1e999999).
func checkJSON(body []byte) error {
	if !utf8.Valid(body) {
		return httpErr(errBadRequest, "the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]struct{}
		key    bool // the next string token is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return decodeError(err)
		}
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= maxJSONDepth {
					return httpErr(errBadRequest, fmt.Sprintf("the request body nests deeper than %d levels", maxJSONDepth))
				}
				if top >= 0 && stack[top].object {
					stack[top].key = true
				}
				stack = append(stack, frame{object: t == '{', key: t == '{'})
			default:
				stack = stack[:top]
				continue
			}
			continue
		case string:
			if top >= 0 && stack[top].object && stack[top].key {
				if stack[top].keys == nil {
					stack[top].keys = map[string]struct{}{}
				}
				if _, dup := stack[top].keys[t]; dup {
					return httpErr(errBadRequest, fmt.Sprintf("the request body has the key %q twice in one object", t))
				}
				stack[top].keys[t] = struct{}{}
				stack[top].key = false
				continue
			}
		case json.Number:
			// No JSON writer of a client (JSON.stringify, encoding/json)
			// makes a number past the float64 range; reading one would
			// cost a big-number parse of each field for nothing.
			if f, err := strconv.ParseFloat(t.String(), 64); err != nil && math.IsInf(f, 0) {
				n := t.String()
				if len(n) > 24 {
					n = n[:24] + "…"
				}
				return httpErr(errBadRequest, fmt.Sprintf("the request body has the number %s, which is out of range", n))
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].key = true // a value was read: a key comes next
		}
	}
}

func checkJSONContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		return httpErr(errUnsupportedMedia, "the request body must be application/json")
	}
	return nil
}

func decodeError(err error) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return httpErr(errBodyTooLarge, fmt.Sprintf("the request body is over the %d byte limit", mbe.Limit))
	case errors.Is(err, io.EOF):
		return httpErr(errBadRequest, "the request body is empty; send a JSON object")
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return httpErr(errBadRequest, "the request body is not valid JSON")
	case errors.As(err, &te):
		if te.Field == "" {
			return httpErr(errBadRequest, fmt.Sprintf("the request body must be a JSON object, not %s", te.Value))
		}
		return httpErr(errBadRequest, fmt.Sprintf("field %s must not be %s", te.Field, te.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return httpErr(errBadRequest, "unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return httpErr(errBadRequest, "the request body could not be decoded")
}
