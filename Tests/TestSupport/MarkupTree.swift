import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// An element of a parsed XML (or XHTML, or SVG) document, for tests that read generated markup.
public final class MarkupNode: @unchecked Sendable {
    public let name: String
    public let attributes: [String: String]
    public internal(set) var children: [MarkupNode] = []
    /// The text directly inside the element.
    public internal(set) var text = ""

    init(name: String, attributes: [String: String]) {
        self.name = name
        self.attributes = attributes
    }

    /// The element's classes (`class="a b"`).
    public var classes: Set<String> {
        Set((attributes["class"] ?? "").split(separator: " ").map(String.init))
    }

    /// Every element under this one named `name` (any name for `nil`), in document order.
    public func descendants(_ name: String? = nil) -> [MarkupNode] {
        var found: [MarkupNode] = []
        for child in children {
            if name == nil || child.name == name { found.append(child) }
            found += child.descendants(name)
        }
        return found
    }

    /// The text of this element and every element under it.
    public var allText: String { text + children.map(\.allText).joined() }
}

/// Parses well-formed XML with Foundation's `XMLParser` (libxml2 on Linux): the document's root element.
/// - Throws: `MarkupError` with the parser's message, line and column when the text is not well-formed.
public func parseMarkup(_ text: String) throws -> MarkupNode {
    let builder = MarkupTreeBuilder()
    let parser = XMLParser(data: Data(text.utf8))
    parser.delegate = builder
    // On Linux, parse() returns true after libxml2 recovered from an error: the error is what says.
    let parsed = parser.parse()
    guard parsed, builder.error == nil, parser.parserError == nil, let root = builder.root else {
        let error = builder.error ?? parser.parserError
        throw MarkupError(
            message: "\(error.map { "\($0)" } ?? "no root element") at line \(builder.errorLine ?? parser.lineNumber), "
                + "column \(builder.errorColumn ?? parser.columnNumber)"
        )
    }
    return root
}

/// Markup that does not parse.
public struct MarkupError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

private final class MarkupTreeBuilder: NSObject, XMLParserDelegate {
    var root: MarkupNode?
    var stack: [MarkupNode] = []
    var error: (any Error)?
    var errorLine: Int?
    var errorColumn: Int?

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        guard error == nil else { return }
        error = parseError
        errorLine = parser.lineNumber
        errorColumn = parser.columnNumber
    }

    func parser(
        _ parser: XMLParser,
        didStartElement elementName: String,
        namespaceURI: String?,
        qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        let node = MarkupNode(name: elementName, attributes: attributes)
        if let parent = stack.last { parent.children.append(node) } else { root = node }
        stack.append(node)
    }

    func parser(
        _ parser: XMLParser,
        didEndElement elementName: String,
        namespaceURI: String?,
        qualifiedName: String?
    ) {
        if !stack.isEmpty { stack.removeLast() }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        stack.last?.text += string
    }
}
