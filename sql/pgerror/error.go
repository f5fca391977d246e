// Package pgerror builds errors that carry a PostgreSQL SQLSTATE from the
// place they are born. Only the server turns them into ErrorResponse fields.
// It imports only sql/pgcode.
package pgerror

import (
	"context"
	"errors"
	"fmt"

	"sluice/sql/pgcode"
)

// Error is an error with a SQLSTATE and the optional fields of a Postgres
// ErrorResponse.
type Error struct {
	Code     pgcode.Code
	Message  string
	Detail   string
	Hint     string
	Position int // 1-based character position in the user's statement; 0 = none
	// Where is the context of the error (the ErrorResponse 'W' field), such
	// as `COPY t, line 3, column v: "abc"`.
	Where    string
	Severity string
	cause    error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the wrapped cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// New returns an error with code and a formatted message.
func New(code pgcode.Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Newf is New; kept for readability at call sites that format.
func Newf(code pgcode.Code, format string, args ...any) *Error {
	return New(code, format, args...)
}

// Wrap returns an error with the given code and message whose cause is err.
// If err already carries a non-internal code, that code wins.
func Wrap(err error, code pgcode.Code, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg = msg + ": " + err.Error()
	}
	e := &Error{Code: code, Message: msg, cause: err}
	var inner *Error
	if errors.As(err, &inner) && !inner.Code.IsInternal() && code.IsInternal() {
		e.Code = inner.Code
	}
	return e
}

// WithHint sets the hint and returns e.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// WithDetail sets the detail and returns e.
func (e *Error) WithDetail(format string, args ...any) *Error {
	e.Detail = fmt.Sprintf(format, args...)
	return e
}

// WithWhere sets the context (the ErrorResponse 'W' field) and returns e.
func (e *Error) WithWhere(format string, args ...any) *Error {
	e.Where = fmt.Sprintf(format, args...)
	return e
}

// WithPosition sets the 1-based character position and returns e.
func (e *Error) WithPosition(pos int) *Error {
	e.Position = pos
	return e
}

// GetCode returns the SQLSTATE of err: its own, a wrapped one, 57014 for a
// cancelled context, or XX000 for an untagged error.
func GetCode(err error) pgcode.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) {
		return pgcode.QueryCanceled
	}
	return pgcode.Internal
}

// Flatten returns err as an *Error, tagging untagged errors XX000 and
// cancellations 57014.
func Flatten(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	code := GetCode(err)
	msg := err.Error()
	if code == pgcode.QueryCanceled {
		msg = "canceling statement due to user request"
	}
	return &Error{Code: code, Message: msg, cause: err}
}

// Unsupported returns a 0A000 error naming what is not supported.
func Unsupported(format string, args ...any) *Error {
	return New(pgcode.FeatureNotSupported, format, args...)
}
