/// Push request bodies at the edges of the protocol's JSON: numbers JSON does not allow or that
/// do not fit, a schema, unknown and repeated keys, an unsupported version, an unknown
/// operation, a malformed stamp, escapes and a lone surrogate, other value kinds, decimals
/// (valid and not), trailing input and surrounding whitespace. What the hand-written reader and
/// the server's decoding make of them is compared with `JSONDecoder`.
public enum PushBodySamples {
    /// The bodies.
    public static let awkward: [String] = {
        let change = #"{"op":"insert","entity":"Note","recordID":"n1","scope":"user:alice","fields":{"n":{"t":"int","v":NUMBER}}}"#
        func body(_ number: String, extra: String = "", version: String = "1") -> String {
            #"{"protocolVersion":"# + version + #","clientID":"c1""# + extra + #","mutations":[{"id":1,"stamp":"5","changes":["#
                + change.replacingOccurrences(of: "NUMBER", with: number) + "]}]}"
        }
        return [
            body("01"), body("-01"), body(".5"), body("1."), body("+1"), body("1e2"), body("1.0"), body("-0"), body("99999999999999999999"),
            body("7"), body("7", extra: #","schema":null"#), body("7", extra: #","unknown":1"#), body("7", extra: #","clientID":"c2""#),
            body("7", version: "99"),
            body("7").replacingOccurrences(of: #""op":"insert""#, with: #""op":"upsert""#),
            body("7").replacingOccurrences(of: #""stamp":"5""#, with: #""stamp":"+5""#),
            body("7").replacingOccurrences(of: "user:alice", with: #"user:\u00e9\ud83c\udf89"#),
            body("7").replacingOccurrences(of: "user:alice", with: #"user:\ud83c"#),
            body("7").replacingOccurrences(of: #""n":{"t":"int","v":7}"#, with: #""n":{"t":"double","v":1e2},"m":null,"d":{"t":"date","v":-0.5e-3}"#),
            body("7").replacingOccurrences(of: #"{"t":"int","v":7}"#, with: #"{"t":"decimal","v":"12.50"}"#),
            body("7").replacingOccurrences(of: #"{"t":"int","v":7}"#, with: #"{"t":"decimal","v":"twelve"}"#),
            body("7") + " x", " " + body("7") + "\n",
        ]
    }()
}
