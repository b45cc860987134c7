import SwiftSyntax
import SwiftSyntaxMacros

/// `@Attribute(...)`: a marker read by `@Model`; it generates nothing itself.
public struct AttributeMacro: PeerMacro {
    /// Expands the macro (see the type's documentation).
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `@Relationship(...)`: a marker read by `@Model`; it generates nothing itself.
public struct RelationshipMacro: PeerMacro {
    /// Expands the macro (see the type's documentation).
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `@Transient`: a marker read by `@Model`, which leaves the property as ordinary storage.
public struct TransientMacro: PeerMacro {
    /// Expands the macro (see the type's documentation).
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `#Unique<T>(...)`: read by `@Model`, which turns it into the entity's uniqueness constraints.
public struct UniqueMacro: DeclarationMacro {
    /// Expands the macro (see the type's documentation).
    public static func expansion(
        of node: some FreestandingMacroExpansionSyntax,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `#Index<T>(...)`: read by `@Model`, which turns it into the entity's indexes.
public struct IndexMacro: DeclarationMacro {
    /// Expands the macro (see the type's documentation).
    public static func expansion(
        of node: some FreestandingMacroExpansionSyntax,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}
