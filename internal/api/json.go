package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/strictjson"
)

// encode writes v as JSON with the status, or an internal error when v
// cannot be encoded.
func encode(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"code":"`+memory.CodeInternal+`","message":"internal error","details":{}}}`+"\n")
		return
	}
	writeJSON(w, status, buf.Bytes())
}

// writeJSON writes an encoded JSON body. Its length is known, so the
// response goes out in one piece rather than chunked.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// jsonHandler returns a command's handler. It decodes the request body
// strictly, calls the command with memoryd's request id, and answers with
// its result or its error.
func jsonHandler[T any, R any](log *slog.Logger, call func(r *http.Request, req T, reqID string) (R, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req T
		if err := decode(r, &req); err != nil {
			writeError(w, r, log, err)
			return
		}
		res, err := call(r, req, requestID(r.Context()))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, res)
	}
}

// maxJSONDepth bounds the nesting of request bodies.
const maxJSONDepth = strictjson.MaxDepth

// decode reads the request body as exactly one JSON value into v. It
// refuses a wrong content type and whatever checkJSON refuses.
func decode(r *http.Request, v any) error {
	if err := checkJSONContentType(r); err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return decodeError(io.EOF)
	}
	// checkJSON refuses unknown fields and data after the value, so the
	// plain and faster json.Unmarshal decodes what is left.
	if err := checkJSON(body, reflect.TypeOf(v)); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return decodeError(err)
	}
	return nil
}

// checkJSON refuses what encoding/json would accept silently, naming the
// rule the body breaks.
func checkJSON(body []byte, target reflect.Type) error {
	err := strictjson.Check(body, target, maxJSONDepth)
	var se *strictjson.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	switch se.Rule {
	case strictjson.ErrSyntax:
		return errNotJSON
	case strictjson.ErrTrailingData:
		return errTrailingData
	}
	return httpErr(errBadRequest, se.Describe("the request body"))
}

// errNotJSON and errTrailingData refuse a body that is not one JSON value.
var (
	errNotJSON      = httpErr(errBadRequest, "the request body is not valid JSON")
	errTrailingData = httpErr(errBadRequest, "the request body has data after its JSON value")
)

// checkJSONContentType refuses a body that is not application/json.
func checkJSONContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "application/json" { // what clients send, with no parameters to parse
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		return httpErr(errUnsupportedMedia, "the request body must be application/json")
	}
	return nil
}

// decodeError turns a decoding error into a bad request naming the problem.
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
