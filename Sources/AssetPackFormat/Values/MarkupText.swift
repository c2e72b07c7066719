/// Text for the HTML pages the tools write (`bench --html`, `upgrade-matrix --html`).
package enum MarkupText {
    /// `text` safe inside an element or a quoted attribute of HTML, SVG and XML.
    package static func escaped(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
