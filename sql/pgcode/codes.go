// Package pgcode holds the PostgreSQL SQLSTATE codes that Sluice reports.
// It is a leaf: it imports nothing from Sluice and anyone may import it.
package pgcode

// Code is a five-character SQLSTATE.
type Code string

// The codes Sluice uses, named as in PostgreSQL's errcodes.txt.
const (
	SuccessfulCompletion Code = "00000"
	Warning              Code = "01000"
	ConnectionException  Code = "08000"
	ProtocolViolation    Code = "08P01"
	// Connectors: a server they cannot reach, or that refuses their login.
	SQLClientUnableToEstablishSQLConnection Code = "08001"
	FeatureNotSupported                     Code = "0A000"
	CardinalityViolation                    Code = "21000"
	DataException                           Code = "22000"
	StringDataRightTrunc                    Code = "22001"
	NumericValueOutOfRange                  Code = "22003"
	InvalidDatetimeFormat                   Code = "22007"
	DatetimeFieldOverflow                   Code = "22008"
	DivisionByZero                          Code = "22012"
	InvalidParameterValue                   Code = "22023"
	InvalidRegularExpression                Code = "2201B"
	InvalidTextRepresentation               Code = "22P02"
	CharacterNotInRepertoire                Code = "22021"
	InvalidBinaryRepresentation             Code = "22P03"
	NotNullViolation                        Code = "23502"
	UniqueViolation                         Code = "23505"
	CheckViolation                          Code = "23514"
	GeneratedAlways                         Code = "428C9"
	SequenceGeneratorLimitExceeded          Code = "2200H"
	DuplicateSchema                         Code = "42P06"
	InvalidSchemaName                       Code = "3F000"
	InvalidTableDefinition                  Code = "42P16"
	ReservedName                            Code = "42939"
	InvalidTransactionState                 Code = "25000"
	InvalidSQLStatementName                 Code = "26000"
	InvalidCursorName                       Code = "34000"
	DependentObjectsStillExist              Code = "2BP01"
	SyntaxErrorOrAccessRuleViolation        Code = "42000"
	Syntax                                  Code = "42601"
	InsufficientPrivilege                   Code = "42501"
	InvalidGrantOperation                   Code = "0LP01"
	WarningPrivilegeNotGranted              Code = "01007"
	WarningPrivilegeNotRevoked              Code = "01006"
	UndefinedColumn                         Code = "42703"
	UndefinedObject                         Code = "42704"
	UndefinedTable                          Code = "42P01"
	UndefinedFunction                       Code = "42883"
	UndefinedParameter                      Code = "42P02"
	AmbiguousColumn                         Code = "42702"
	DuplicateColumn                         Code = "42701"
	DuplicateObject                         Code = "42710"
	DuplicateTable                          Code = "42P07"
	DuplicateFunction                       Code = "42723"
	DuplicatePreparedStatement              Code = "42P05"
	GroupingError                           Code = "42803"
	DatatypeMismatch                        Code = "42804"
	CannotCoerce                            Code = "42846"
	WrongObjectType                         Code = "42809"
	InvalidColumnReference                  Code = "42P10"
	InvalidObjectDefinition                 Code = "42P17"
	WindowingError                          Code = "42P20"
	InvalidName                             Code = "42602"
	ProgramLimitExceeded                    Code = "54000"
	ObjectNotInPrerequisiteState            Code = "55000"
	QueryCanceled                           Code = "57014"
	AdminShutdown                           Code = "57P01"
	IdleSessionTimeout                      Code = "57P05"
	IdleInTransactionSessionTimeout         Code = "25P03"
	OutOfMemory                             Code = "53200"
	ConfigurationLimitExceeded              Code = "53400"
	IOError                                 Code = "58030"
	Internal                                Code = "XX000"
	DataCorrupted                           Code = "XX001"
	ConfigFileError                         Code = "F0000"
	DuplicateFile                           Code = "58P02"
	UndefinedFile                           Code = "58P01"
)

// IsInternal reports whether c is an internal (XX) code, which a wrapping
// error may replace with its own.
func (c Code) IsInternal() bool { return len(c) == 5 && c[:2] == "XX" }

// Transaction codes.
const (
	ActiveSQLTransaction          Code = "25001"
	ReadOnlySQLTransaction        Code = "25006"
	NoActiveSQLTransaction        Code = "25P01"
	InFailedSQLTransaction        Code = "25P02"
	InvalidSavepointSpecification Code = "3B001"
	SerializationFailure          Code = "40001"
)
