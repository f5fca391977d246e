package eval

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds to_char: the date/time patterns (YYYY, MM, DD, HH24,
// Mon, Day, ...) and the number patterns (9, 0, ., ,, S, MI, PR, FM, ...),
// following the behaviour of Postgres' formatting.c.

// ---- number formatting ----

type numKW uint8

const (
	nkLit numKW = iota
	nkComma
	nkDec
	nk0
	nk9
	nkB
	nkC
	nkD
	nkE
	nkFM
	nkG
	nkL
	nkMI
	nkPL
	nkPR
	nkRN
	nkSG
	nkSP
	nkS
	nkTH
	nkth
	nkV
)

// numKeywords in match order (longer spellings first where they share a
// prefix).
var numKeywords = []struct {
	s  string
	kw numKW
}{
	{",", nkComma}, {".", nkDec}, {"0", nk0}, {"9", nk9},
	{"B", nkB}, {"C", nkC}, {"D", nkD}, {"EEEE", nkE}, {"FM", nkFM}, {"G", nkG}, {"L", nkL},
	{"MI", nkMI}, {"PL", nkPL}, {"PR", nkPR}, {"RN", nkRN}, {"SG", nkSG}, {"SP", nkSP}, {"S", nkS},
	{"TH", nkTH}, {"V", nkV},
	{"b", nkB}, {"c", nkC}, {"d", nkD}, {"eeee", nkE}, {"fm", nkFM}, {"g", nkG}, {"l", nkL},
	{"mi", nkMI}, {"pl", nkPL}, {"pr", nkPR}, {"rn", nkRN}, {"sg", nkSG}, {"sp", nkSP}, {"s", nkS},
	{"th", nkth}, {"v", nkV},
}

type numNode struct {
	kw  numKW
	lit string
}

const (
	nfDecimal = 1 << iota
	nfLDecimal
	nfZero
	nfBlank
	nfFillMode
	nfLSign
	nfBracket
	nfMinus
	nfPlus
	nfRoman
	nfMulti
	nfEEEE
)

const (
	lsignNone = 0
	lsignPre  = -1
	lsignPost = 1
)

type numDesc struct {
	pre, post, flag, lsign, preLsignNum, multi, zeroStart, zeroEnd int
}

func numFormatError(format string, args ...any) error {
	return pgerror.New(pgcode.Syntax, format, args...)
}

// parseNumFormat parses a number format picture.
func parseNumFormat(f string) ([]numNode, numDesc, error) {
	var nodes []numNode
	var d numDesc
	for i := 0; i < len(f); {
		matched := false
		for _, k := range numKeywords {
			if strings.HasPrefix(f[i:], k.s) {
				if err := d.prepare(k.kw); err != nil {
					return nil, d, err
				}
				nodes = append(nodes, numNode{kw: k.kw})
				i += len(k.s)
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		if f[i] == '"' {
			i++
			for i < len(f) && f[i] != '"' {
				if f[i] == '\\' && i+1 < len(f) {
					i++
				}
				nodes = append(nodes, numNode{lit: f[i : i+1]})
				i++
			}
			i++
			continue
		}
		_, sz := decodeRune(f[i:])
		nodes = append(nodes, numNode{lit: f[i : i+sz]})
		i += sz
	}
	return nodes, d, nil
}

func decodeRune(s string) (rune, int) { return utf8.DecodeRuneInString(s) }

// prepare accounts for one keyword in the description (NUMDesc_prepare).
func (d *numDesc) prepare(kw numKW) error {
	if d.flag&nfEEEE != 0 && kw != nkE {
		return numFormatError("\"EEEE\" must be the last pattern used")
	}
	switch kw {
	case nk9:
		if d.flag&nfBracket != 0 {
			return numFormatError("\"9\" must be ahead of \"PR\"")
		}
		if d.flag&nfMulti != 0 {
			d.multi++
			break
		}
		if d.flag&nfDecimal != 0 {
			d.post++
		} else {
			d.pre++
		}
	case nk0:
		if d.flag&nfBracket != 0 {
			return numFormatError("\"0\" must be ahead of \"PR\"")
		}
		if d.flag&nfZero == 0 && d.flag&nfDecimal == 0 {
			d.flag |= nfZero
			d.zeroStart = d.pre + 1
		}
		if d.flag&nfDecimal == 0 {
			d.pre++
		} else {
			d.post++
		}
		d.zeroEnd = d.pre + d.post
	case nkB:
		if d.pre == 0 && d.post == 0 && d.flag&nfZero == 0 {
			d.flag |= nfBlank
		}
	case nkD, nkDec:
		if kw == nkD {
			d.flag |= nfLDecimal
		}
		if d.flag&nfDecimal != 0 {
			return numFormatError("multiple decimal points")
		}
		if d.flag&nfMulti != 0 {
			return numFormatError("cannot use \"V\" and decimal point together")
		}
		d.flag |= nfDecimal
	case nkFM:
		d.flag |= nfFillMode
	case nkS:
		if d.flag&nfLSign != 0 {
			return numFormatError("cannot use \"S\" twice")
		}
		if d.flag&(nfPlus|nfMinus|nfBracket) != 0 {
			return numFormatError("cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together")
		}
		if d.flag&nfDecimal == 0 {
			d.lsign = lsignPre
			d.preLsignNum = d.pre
			d.flag |= nfLSign
		} else if d.lsign == lsignNone {
			d.lsign = lsignPost
			d.flag |= nfLSign
		}
	case nkMI:
		if d.flag&nfLSign != 0 {
			return numFormatError("cannot use \"S\" and \"MI\" together")
		}
		d.flag |= nfMinus
	case nkPL:
		if d.flag&nfLSign != 0 {
			return numFormatError("cannot use \"S\" and \"PL\" together")
		}
		d.flag |= nfPlus
	case nkSG:
		if d.flag&nfLSign != 0 {
			return numFormatError("cannot use \"S\" and \"SG\" together")
		}
		d.flag |= nfMinus | nfPlus
	case nkPR:
		if d.flag&(nfLSign|nfPlus|nfMinus) != 0 {
			return numFormatError("cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together")
		}
		d.flag |= nfBracket
	case nkRN:
		d.flag |= nfRoman
	case nkV:
		if d.flag&nfDecimal != 0 {
			return numFormatError("cannot use \"V\" and decimal point together")
		}
		d.flag |= nfMulti
	case nkE:
		if d.flag&nfEEEE != 0 {
			return numFormatError("cannot use \"EEEE\" twice")
		}
		if d.flag&(nfBlank|nfFillMode|nfLSign|nfBracket|nfMinus|nfPlus|nfRoman|nfMulti) != 0 {
			return numFormatError("\"EEEE\" is incompatible with other formats")
		}
		d.flag |= nfEEEE
	}
	return nil
}

// numProc renders a prepared number string through the format picture
// (the to_char half of Postgres' NUM_processor).
type numProc struct {
	d            numDesc
	number       string
	numberP      int
	out          []byte
	cut          int // length at which a NUL was written, or -1
	sign         byte
	signWrote    bool
	numIn        bool
	numCurr      int
	numCount     int
	outPreSpaces int
	lastRelevant int // index into number, or -1
}

func (p *numProc) is(f int) bool { return p.d.flag&f != 0 }

func (p *numProc) cur() byte {
	if p.numberP < len(p.number) {
		return p.number[p.numberP]
	}
	return 0
}

func (p *numProc) put(c byte) {
	if c == 0 {
		if p.cut < 0 {
			p.cut = len(p.out)
		}
		return
	}
	p.out = append(p.out, c)
}

func (p *numProc) predecSpace() bool {
	return !p.is(nfZero) && p.numberP == 0 && len(p.number) > 0 && p.number[0] == '0' && p.d.post != 0
}

func (p *numProc) lastRelevantIsDot() bool {
	return p.lastRelevant >= 0 && p.number[p.lastRelevant] == '.'
}

func (p *numProc) numpart(kw numKW) {
	p.numIn = false
	if !p.signWrote &&
		(p.numCurr >= p.outPreSpaces || (p.is(nfZero) && p.d.zeroStart == p.numCurr)) &&
		(!p.predecSpace() || p.lastRelevantIsDot()) {
		switch {
		case p.is(nfLSign):
			if p.d.lsign == lsignPre {
				p.put(signChar(p.sign))
				p.signWrote = true
			}
		case p.is(nfBracket):
			if p.sign == '+' {
				p.put(' ')
			} else {
				p.put('<')
			}
			p.signWrote = true
		case p.sign == '+':
			if !p.is(nfFillMode) {
				p.put(' ')
			}
			p.signWrote = true
		case p.sign == '-':
			p.put('-')
			p.signWrote = true
		}
	}
	switch {
	case p.numCurr < p.outPreSpaces && (p.d.zeroStart > p.numCurr || !p.is(nfZero)):
		if !p.is(nfFillMode) {
			p.put(' ')
		}
	case p.is(nfZero) && p.numCurr < p.outPreSpaces && p.d.zeroStart <= p.numCurr:
		p.put('0')
		p.numIn = true
	default:
		if p.cur() == '.' {
			if !p.lastRelevantIsDot() || p.is(nfFillMode) {
				p.put('.')
			}
		} else {
			switch {
			case p.lastRelevant >= 0 && p.numberP > p.lastRelevant && kw != nk0:
			case p.predecSpace():
				if !p.is(nfFillMode) {
					p.put(' ')
				} else if p.lastRelevantIsDot() {
					p.put('0')
				}
			default:
				p.put(p.cur())
				p.numIn = true
			}
		}
		if p.numberP < len(p.number) {
			p.numberP++
		}
	}
	end := p.numCount
	if p.outPreSpaces > 0 {
		end++
	}
	if p.is(nfDecimal) {
		end++
	}
	if p.lastRelevant >= 0 && p.lastRelevant == p.numberP {
		end = p.numCurr
	}
	if p.numCurr+1 == end {
		if p.signWrote && p.is(nfBracket) {
			if p.sign == '+' {
				p.put(' ')
			} else {
				p.put('>')
			}
		} else if p.is(nfLSign) && p.d.lsign == lsignPost {
			p.put(signChar(p.sign))
		}
	}
	p.numCurr++
}

func signChar(s byte) byte {
	if s == '-' {
		return '-'
	}
	return '+'
}

// ordinal returns the English ordinal suffix of the digits ending num.
func ordinal(num string, upper bool) string {
	s := "th"
	if n := len(num); n > 0 {
		last := num[n-1]
		if n > 1 && num[n-2] == '1' {
			last = '0'
		}
		switch last {
		case '1':
			s = "st"
		case '2':
			s = "nd"
		case '3':
			s = "rd"
		}
	}
	if upper {
		return strings.ToUpper(s)
	}
	return s
}

func renderNumber(nodes []numNode, d numDesc, number string, outPreSpaces int, sign byte) string {
	p := &numProc{d: d, number: number, sign: sign, outPreSpaces: outPreSpaces, lastRelevant: -1, cut: -1}
	if p.d.zeroStart > 0 {
		p.d.zeroStart--
	}
	if p.is(nfPlus) || p.is(nfMinus) {
		p.signWrote = !(p.is(nfPlus) && !p.is(nfMinus))
	} else {
		if sign != '-' && p.is(nfFillMode) {
			p.d.flag &^= nfBracket
		}
		p.signWrote = sign == '+' && p.is(nfFillMode) && !p.is(nfLSign)
		if p.d.lsign == lsignPre && p.d.pre == p.d.preLsignNum {
			p.d.lsign = lsignPost
		}
	}
	p.numCount = d.post + d.pre - 1
	if p.is(nfFillMode) && p.is(nfDecimal) {
		if dot := strings.IndexByte(number, '.'); dot >= 0 {
			p.lastRelevant = dot
			for i := dot + 1; i < len(number); i++ {
				if number[i] != '0' {
					p.lastRelevant = i
				}
			}
			if p.d.zeroEnd > outPreSpaces {
				lastZero := len(number) - 1
				if z := p.d.zeroEnd - outPreSpaces; z < lastZero {
					lastZero = z
				}
				if p.lastRelevant < lastZero {
					p.lastRelevant = lastZero
				}
			}
		}
	}
	if !p.signWrote && outPreSpaces == 0 {
		p.numCount++
	}
	for _, n := range nodes {
		switch n.kw {
		case nkLit:
			for i := 0; i < len(n.lit); i++ {
				p.put(n.lit[i])
			}
		case nk9, nk0, nkDec, nkD:
			p.numpart(n.kw)
		case nkComma, nkG:
			switch {
			case p.numIn:
				p.put(',')
			case !p.is(nfFillMode):
				p.put(' ')
			}
		case nkL:
			p.put(' ')
		case nkTH, nkth:
			if p.is(nfRoman) || (len(number) > 0 && number[0] == '#') || sign == '-' || p.is(nfDecimal) {
				continue
			}
			for _, c := range []byte(ordinal(number, n.kw == nkTH)) {
				p.put(c)
			}
		case nkMI:
			switch {
			case sign == '-':
				p.put('-')
			case !p.is(nfFillMode):
				p.put(' ')
			}
		case nkPL:
			switch {
			case sign == '+':
				p.put('+')
			case !p.is(nfFillMode):
				p.put(' ')
			}
		case nkSG:
			p.put(sign)
		}
	}
	if p.cut >= 0 {
		return string(p.out[:p.cut])
	}
	return string(p.out)
}

// numberString splits a formatted absolute value "ddd.fff" into the
// to_char inputs: the string, the leading pad and overflow handling.
func numberString(abs string, d numDesc) (string, int) {
	preLen := len(abs)
	if i := strings.IndexByte(abs, '.'); i >= 0 {
		preLen = i
	}
	switch {
	case preLen < d.pre:
		return abs, d.pre - preLen
	case preLen > d.pre:
		b := []byte(strings.Repeat("#", d.pre+d.post+1))
		b[d.pre] = '.'
		return string(b), 0
	}
	return abs, 0
}

func unsupportedNumFormat(d numDesc) error {
	switch {
	case d.flag&nfRoman != 0:
		return pgerror.Unsupported("to_char: roman numerals (RN) are not supported")
	case d.flag&nfEEEE != 0:
		return pgerror.Unsupported("to_char: scientific notation (EEEE) is not supported")
	case d.flag&nfMulti != 0:
		return pgerror.Unsupported("to_char: V is not supported")
	}
	return nil
}

// numToChar formats an integer, float or decimal datum of type t.
func numToChar(v types.Datum, t types.T, format string) (types.Datum, error) {
	if format == "" {
		return str(""), nil
	}
	nodes, d, err := parseNumFormat(format)
	if err != nil {
		return types.Null, err
	}
	if err := unsupportedNumFormat(d); err != nil {
		return types.Null, err
	}
	sign := byte('+')
	var abs string
	switch {
	case v.K == types.KInt:
		u := v.I
		if u < 0 {
			sign = '-'
		}
		abs = strconv.FormatUint(absU(u), 10)
		if d.post > 0 {
			abs += "." + strings.Repeat("0", d.post)
		}
	case v.K == types.KFloat:
		f := v.Float()
		maxDig := 15
		if t.Fam == types.Float4 {
			maxDig = 6
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			abs = "Infinity"
			if math.IsNaN(f) {
				abs = "NaN"
			}
			if f < 0 {
				sign = '-'
			}
			break
		}
		pre := len(strconv.FormatFloat(math.Abs(f), 'f', 0, 64))
		post := d.post
		if pre >= maxDig {
			post = 0
		} else if pre+post > maxDig {
			post = maxDig - pre
		}
		d.post = post
		s := strconv.FormatFloat(f, 'f', post, 64)
		if strings.HasPrefix(s, "-") {
			sign = '-'
			s = s[1:]
		}
		abs = s
	case v.K == types.KDecimal && !types.DecIsFinite(v):
		abs = "NaN"
		if inf := types.DecIsInf(v); inf != 0 {
			abs = "Infinity"
			if inf < 0 {
				sign = '-'
			}
		}
	case v.K == types.KDecimal:
		r, err := decRound(v, int32(d.post))
		if err != nil {
			return types.Null, err
		}
		if r.I < 0 {
			sign = '-'
		}
		abs = decPlain(r, d.post)
	default:
		return types.Null, pgerror.New(pgcode.Internal, "to_char: unexpected value")
	}
	number, pre := numberString(abs, d)
	return str(renderNumber(nodes, d, number, pre, sign)), nil
}

func absU(i int64) uint64 {
	if i < 0 {
		return uint64(-i)
	}
	return uint64(i)
}

// decPlain formats |d| with exactly scale decimals.
func decPlain(d types.Datum, scale int) string {
	coef := types.DecCoef(d)
	coef.Abs(coef)
	x := int(d.X)
	switch {
	case x < scale:
		coef.Mul(coef, pow10Int(int64(scale-x)))
	case x > scale:
		coef.Quo(coef, pow10Int(int64(x-scale)))
	}
	s := coef.String()
	if scale == 0 {
		return s
	}
	for len(s) <= scale {
		s = "0" + s
	}
	return s[:len(s)-scale] + "." + s[len(s)-scale:]
}

// ---- date/time formatting ----

type dchKW uint8

const (
	dLit dchKW = iota
	dAD
	dADdots
	dAM
	dAMdots
	dBC
	dBCdots
	dPM
	dPMdots
	dCC
	dDAY
	dDDD
	dDD
	dDY
	dD
	dFF
	dFX
	dHH24
	dHH12
	dHH
	dIDDD
	dID
	dIW
	dIYYY
	dIYY
	dIY
	dI
	dJ
	dMI
	dMM
	dMONTH
	dMON
	dMS
	dOF
	dQ
	dRM
	dSSSSS
	dSSSS
	dSS
	dTZH
	dTZM
	dTZ
	dUS
	dWW
	dW
	dYcomma
	dYYYY
	dYYY
	dYY
	dY
)

// caseMode is how a name keyword capitalises: NAME, Name or name.
type caseMode uint8

const (
	caseUpper caseMode = iota
	caseTitle
	caseLower
)

type dchDef struct {
	s    string
	kw   dchKW
	cm   caseMode
	arg  int // FFn digits
	isNm bool
}

// dchKeywords, longest spellings first among shared prefixes.
var dchKeywords = func() []dchDef {
	defs := []dchDef{
		{s: "A.D.", kw: dADdots}, {s: "A.M.", kw: dAMdots}, {s: "AD", kw: dAD}, {s: "AM", kw: dAM},
		{s: "B.C.", kw: dBCdots}, {s: "BC", kw: dBC}, {s: "CC", kw: dCC, isNm: true},
		{s: "DAY", kw: dDAY}, {s: "DDD", kw: dDDD, isNm: true}, {s: "DD", kw: dDD, isNm: true}, {s: "DY", kw: dDY},
		{s: "Day", kw: dDAY, cm: caseTitle}, {s: "Dy", kw: dDY, cm: caseTitle}, {s: "D", kw: dD, isNm: true},
		{s: "FF1", kw: dFF, arg: 1, isNm: true}, {s: "FF2", kw: dFF, arg: 2, isNm: true}, {s: "FF3", kw: dFF, arg: 3, isNm: true},
		{s: "FF4", kw: dFF, arg: 4, isNm: true}, {s: "FF5", kw: dFF, arg: 5, isNm: true}, {s: "FF6", kw: dFF, arg: 6, isNm: true},
		{s: "FX", kw: dFX},
		{s: "HH24", kw: dHH24, isNm: true}, {s: "HH12", kw: dHH12, isNm: true}, {s: "HH", kw: dHH, isNm: true},
		{s: "IDDD", kw: dIDDD, isNm: true}, {s: "ID", kw: dID, isNm: true}, {s: "IW", kw: dIW, isNm: true},
		{s: "IYYY", kw: dIYYY, isNm: true}, {s: "IYY", kw: dIYY, isNm: true}, {s: "IY", kw: dIY, isNm: true}, {s: "I", kw: dI, isNm: true},
		{s: "J", kw: dJ, isNm: true}, {s: "MI", kw: dMI, isNm: true}, {s: "MM", kw: dMM, isNm: true},
		{s: "MONTH", kw: dMONTH}, {s: "MON", kw: dMON}, {s: "MS", kw: dMS, isNm: true},
		{s: "Month", kw: dMONTH, cm: caseTitle}, {s: "Mon", kw: dMON, cm: caseTitle},
		{s: "OF", kw: dOF}, {s: "P.M.", kw: dPMdots}, {s: "PM", kw: dPM}, {s: "Q", kw: dQ, isNm: true},
		{s: "RM", kw: dRM}, {s: "SSSSS", kw: dSSSSS, isNm: true}, {s: "SSSS", kw: dSSSS, isNm: true}, {s: "SS", kw: dSS, isNm: true},
		{s: "TZH", kw: dTZH}, {s: "TZM", kw: dTZM}, {s: "TZ", kw: dTZ}, {s: "US", kw: dUS, isNm: true},
		{s: "WW", kw: dWW, isNm: true}, {s: "W", kw: dW, isNm: true},
		{s: "Y,YYY", kw: dYcomma, isNm: true}, {s: "YYYY", kw: dYYYY, isNm: true}, {s: "YYY", kw: dYYY, isNm: true},
		{s: "YY", kw: dYY, isNm: true}, {s: "Y", kw: dY, isNm: true},
	}
	// Lower-case spellings.
	var lower []dchDef
	for _, d := range defs {
		if d.cm == caseTitle {
			continue
		}
		l := d
		l.s = strings.ToLower(d.s)
		if !d.isNm {
			l.cm = caseLower
		}
		switch d.kw {
		case dOF, dTZH, dTZM, dFX:
			continue
		}
		lower = append(lower, l)
	}
	return append(defs, lower...)
}()

type dchNode struct {
	def    *dchDef
	lit    string
	fm, th bool
	thUp   bool
}

func parseDCHFormat(f string) []dchNode {
	var nodes []dchNode
	for i := 0; i < len(f); {
		fm := false
		for {
			if strings.HasPrefix(f[i:], "FM") || strings.HasPrefix(f[i:], "fm") {
				fm = true
				i += 2
				continue
			}
			if strings.HasPrefix(f[i:], "TM") || strings.HasPrefix(f[i:], "tm") {
				i += 2
				continue
			}
			break
		}
		if i >= len(f) {
			break
		}
		var def *dchDef
		for k := range dchKeywords {
			if strings.HasPrefix(f[i:], dchKeywords[k].s) {
				def = &dchKeywords[k]
				break
			}
		}
		if def != nil {
			n := dchNode{def: def, fm: fm}
			i += len(def.s)
			if strings.HasPrefix(f[i:], "TH") {
				n.th, n.thUp = true, true
				i += 2
			} else if strings.HasPrefix(f[i:], "th") {
				n.th = true
				i += 2
			} else if strings.HasPrefix(f[i:], "SP") {
				i += 2
			}
			nodes = append(nodes, n)
			continue
		}
		switch {
		case f[i] == '"':
			i++
			for i < len(f) && f[i] != '"' {
				if f[i] == '\\' && i+1 < len(f) {
					i++
				}
				_, sz := decodeRune(f[i:])
				nodes = append(nodes, dchNode{lit: f[i : i+sz]})
				i += sz
			}
			i++
		case f[i] == '\\' && i+1 < len(f) && f[i+1] == '"':
			nodes = append(nodes, dchNode{lit: `"`})
			i += 2
		default:
			_, sz := decodeRune(f[i:])
			nodes = append(nodes, dchNode{lit: f[i : i+sz]})
			i += sz
		}
	}
	return nodes
}

var (
	monthsFull = []string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
	daysFull     = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	rmMonthsUp   = []string{"XII", "XI", "X", "IX", "VIII", "VII", "VI", "V", "IV", "III", "II", "I"}
	errIntervalF = func() error {
		return pgerror.New(pgcode.InvalidDatetimeFormat, "invalid format specification for an interval value").
			WithHint("Intervals are not tied to specific calendar dates.")
	}
)

func applyCase(s string, cm caseMode) string {
	switch cm {
	case caseUpper:
		return strings.ToUpper(s)
	case caseLower:
		return strings.ToLower(s)
	}
	return s
}

// padInt formats v with its digits zero-padded to width (0: no padding)
// and a minus sign in front: Postgres widens the field for negative values.
// twoDigits holds "00" … "99": hours, minutes, days and months are
// formatted without building a string.
var twoDigits = func() (t [100]string) {
	for i := range t {
		t[i] = string([]byte{byte('0' + i/10), byte('0' + i%10)})
	}
	return t
}()

func padInt(v int64, width int) string {
	if width == 2 && v >= 0 && v < 100 {
		return twoDigits[v]
	}
	s := strconv.FormatInt(absI(v), 10)
	for len(s) < width {
		s = "0" + s
	}
	if v < 0 {
		s = "-" + s
	}
	return s
}

// cPad formats v as C's printf("%0*d", width, v): the sign counts in the
// width.
func cPad(v int64, width int) string {
	if v < 0 && width > 0 {
		width--
	}
	return padInt(v, width)
}

func absI(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// dchTM is the input of the date/time formatter.
type dchTM struct {
	ptm
	yday, wday int
	tz         string // zone abbreviation, "" for timestamp without time zone
	hasTZ      bool
	gmtoff     int64 // the zone's offset east, seconds
	interval   bool
}

func adjustYear(y int, interval bool) int {
	if interval {
		return y
	}
	if y <= 0 {
		return -(y - 1)
	}
	return y
}

func dchToChar(nodes []dchNode, t dchTM) (string, error) {
	var b strings.Builder
	b.Grow(4 * len(nodes)) // most fields are 2–4 characters: one allocation
	for _, n := range nodes {
		if n.def == nil {
			b.WriteString(n.lit)
			continue
		}
		d := n.def
		w := func(width int) int {
			if n.fm {
				return 0
			}
			return width
		}
		var s string
		switch d.kw {
		case dAM, dPM, dAMdots, dPMdots:
			pm := t.hour%24 >= 12
			switch {
			case d.kw == dAM || d.kw == dPM:
				s = "AM"
				if pm {
					s = "PM"
				}
			default:
				s = "A.M."
				if pm {
					s = "P.M."
				}
			}
			s = applyCase(s, d.cm)
		case dAD, dBC, dADdots, dBCdots:
			if t.interval {
				return "", errIntervalF()
			}
			bc := t.year <= 0
			switch {
			case d.kw == dAD || d.kw == dBC:
				s = "AD"
				if bc {
					s = "BC"
				}
			default:
				s = "A.D."
				if bc {
					s = "B.C."
				}
			}
			s = applyCase(s, d.cm)
		case dHH, dHH12:
			h := t.hour % 12
			if h == 0 {
				h = 12
			}
			s = padInt(int64(h), w(2))
		case dHH24:
			s = padInt(int64(t.hour), w(2))
		case dMI:
			s = padInt(int64(t.min), w(2))
		case dSS:
			s = padInt(int64(t.sec), w(2))
		case dFF:
			v := t.fsec
			for i := d.arg; i < 6; i++ {
				v /= 10
			}
			s = cPad(v, d.arg)
		case dMS:
			s = cPad(t.fsec/1000, 3)
		case dUS:
			s = cPad(t.fsec, 6)
		case dSSSS, dSSSSS:
			s = strconv.FormatInt(int64(t.hour)*3600+int64(t.min)*60+int64(t.sec), 10)
		case dTZ:
			if t.interval {
				return "", errIntervalF()
			}
			s = applyCase(t.tz, d.cm)
		case dTZH:
			if t.interval {
				return "", errIntervalF()
			}
			s = offSign(t.gmtoff) + padInt(absI(t.gmtoff)/3600, 2)
		case dOF:
			if t.interval {
				return "", errIntervalF()
			}
			s = offSign(t.gmtoff) + padInt(absI(t.gmtoff)/3600, w(2))
			if m := absI(t.gmtoff) % 3600 / 60; m != 0 {
				s += ":" + padInt(m, 2)
			}
		case dTZM:
			if t.interval {
				return "", errIntervalF()
			}
			s = padInt(absI(t.gmtoff)%3600/60, 2)
		case dMONTH, dMON:
			if t.interval {
				return "", errIntervalF()
			}
			name := monthsFull[t.mon-1]
			if d.kw == dMON {
				name = name[:3]
				s = applyCase(name, d.cm)
			} else {
				s = applyCase(name, d.cm)
				if !n.fm {
					s = padRight(s, 9)
				}
			}
		case dMM:
			s = padInt(int64(t.mon), w(2))
		case dDAY, dDY:
			if t.interval {
				return "", errIntervalF()
			}
			name := daysFull[t.wday]
			if d.kw == dDY {
				s = applyCase(name[:3], d.cm)
			} else {
				s = applyCase(name, d.cm)
				if !n.fm {
					s = padRight(s, 9)
				}
			}
		case dDDD:
			s = cPad(int64(t.yday), w(3))
		case dIDDD:
			s = cPad(int64(date2isoyearday(t.year, t.mon, t.mday)), w(3))
		case dDD:
			s = cPad(int64(t.mday), w(2))
		case dD:
			if t.interval {
				return "", errIntervalF()
			}
			s = strconv.Itoa(t.wday + 1)
		case dID:
			if t.interval {
				return "", errIntervalF()
			}
			wd := t.wday
			if wd == 0 {
				wd = 7
			}
			s = strconv.Itoa(wd)
		case dWW:
			s = cPad(int64((t.yday-1)/7+1), w(2))
		case dIW:
			s = cPad(int64(date2isoweek(t.year, t.mon, t.mday)), w(2))
		case dQ:
			if t.interval && t.mon == 0 {
				continue
			}
			s = strconv.Itoa((t.mon-1)/3 + 1)
		case dCC:
			var c int
			if t.interval {
				c = t.year / 100
			} else if t.year > 0 {
				c = (t.year-1)/100 + 1
			} else {
				c = t.year/100 - 1
			}
			if c <= 99 && c >= -99 {
				s = padInt(int64(c), w(2))
			} else {
				s = strconv.Itoa(c)
			}
		case dYcomma:
			y := adjustYear(t.year, t.interval)
			s = strconv.Itoa(y/1000) + "," + cPad(int64(y-(y/1000)*1000), 3)
		case dYYYY, dYYY, dYY, dY, dIYYY, dIYY, dIY, dI:
			y := t.year
			if d.kw == dIYYY || d.kw == dIYY || d.kw == dIY || d.kw == dI {
				if t.interval {
					return "", errIntervalF()
				}
				y = date2isoyear(t.year, t.mon, t.mday)
			}
			y = adjustYear(y, t.interval)
			var mod, width int
			switch d.kw {
			case dYYYY, dIYYY:
				mod, width = 0, 4
			case dYYY, dIYY:
				mod, width = 1000, 3
			case dYY, dIY:
				mod, width = 100, 2
			default:
				mod, width = 10, 1
			}
			v := y
			if mod > 0 {
				v = y % mod
			}
			s = padInt(int64(v), w(width))
		case dRM:
			if t.interval && t.mon == 0 {
				continue
			}
			s = applyCase(rmMonthsUp[12-t.mon], d.cm)
			if !n.fm {
				s = padRight(s, 4)
			}
		case dW:
			s = strconv.Itoa((t.mday-1)/7 + 1)
		case dJ:
			s = strconv.Itoa(date2j(t.year, t.mon, t.mday))
		case dFX:
		}
		b.WriteString(s)
		if n.th && d.isNm {
			b.WriteString(ordinal(s, n.thUp))
		}
	}
	return b.String(), nil
}

func padRight(s string, n int) string {
	for len(s) < n {
		s += " "
	}
	return s
}

// offSign is the sign of a zone offset as to_char prints it.
func offSign(off int64) string {
	if off < 0 {
		return "-"
	}
	return "+"
}

// timestampToChar formats a timestamp (microseconds) with a parsed
// pattern; a timestamptz (tz) on the wall clock of zone loc.
func timestampToChar(us int64, tz bool, loc *time.Location, nodes []dchNode) (types.Datum, error) {
	if !tsFinite(us) {
		return types.Null, nil
	}
	var off int64
	if tz {
		off = types.ZoneOffset(loc, us)
		us += off * usPerSec
	}
	tm := ts2tm(us)
	jd := date2j(tm.year, tm.mon, tm.mday)
	t := dchTM{ptm: tm, yday: jd - date2j(tm.year, 1, 1) + 1, wday: j2day(jd), hasTZ: tz, gmtoff: off}
	if tz {
		t.tz = types.ZoneAbbrev(loc, us-off*usPerSec)
	}
	s, err := dchToChar(nodes, t)
	if err != nil {
		return types.Null, err
	}
	return str(s), nil
}

// buildTimestampToChar builds to_char(timestamp[tz], text), parsing a
// constant pattern once.
func buildTimestampToChar(b *bctx) (Fn, error) {
	tz := b.args[0].t.Fam == types.TimestampTZ
	ctx := b.ctx
	if fd, ok := b.konst(1); ok && fd.K != types.KNull {
		nodes := parseDCHFormat(fd.S)
		return strict1(b.fn(0), func(a types.Datum) (types.Datum, error) {
			return timestampToChar(a.I, tz, ctx.loc(), nodes)
		}), nil
	}
	return strict2(b.fn(0), b.fn(1), func(a, c types.Datum) (types.Datum, error) {
		return timestampToChar(a.I, tz, ctx.loc(), parseDCHFormat(c.S))
	}), nil
}

// intervalToChar formats an interval with a pattern.
func intervalToChar(iv types.Datum, format string) (types.Datum, error) {
	us := iv.I
	hour := us / usPerHour
	us -= hour * usPerHour
	min := us / usPerMinute
	us -= min * usPerMinute
	sec := us / usPerSec
	fsec := us - sec*usPerSec
	tm := ptm{year: int(iv.M / 12), mon: int(iv.M % 12), mday: int(iv.X), hour: int(hour), min: int(min), sec: int(sec), fsec: fsec}
	t := dchTM{ptm: tm, interval: true, yday: (tm.year*12+tm.mon)*30 + tm.mday}
	s, err := dchToChar(parseDCHFormat(format), t)
	if err != nil {
		return types.Null, err
	}
	return str(s), nil
}

func init() {
	TX := types.Text
	tt := types.TText
	reg("to_char", fams(types.Timestamp, TX), tt, buildTimestampToChar)
	reg("to_char", fams(types.TimestampTZ, TX), tt, buildTimestampToChar)
	reg("to_char", fams(types.Interval, TX), tt, build2(func(a, c types.Datum) (types.Datum, error) {
		return intervalToChar(a, c.S)
	}))
	for _, f := range []types.Family{types.Int4, types.Int8, types.Float4, types.Float8, types.Numeric} {
		t := typeOf(f)
		reg("to_char", fams(f, TX), tt, build2(func(a, c types.Datum) (types.Datum, error) {
			return numToChar(a, t, c.S)
		}))
	}
}
