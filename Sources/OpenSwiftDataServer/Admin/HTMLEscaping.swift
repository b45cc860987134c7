extension String {
    /// The text with every character that HTML gives a meaning to (`&`, `<`, `>`, `"`, `'`)
    /// written as a character reference: safe inside an element and inside a quoted
    /// attribute value.
    var htmlEscaped: String {
        var escaped = ""
        escaped.reserveCapacity(utf8.count)
        for character in unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
