import Foundation
import Items
import QueryPlan

/// One of an index's synonyms as it changes matching (Algolia's synonym
/// objects, `/1/indexes/{index}/synonyms`): its texts folded into words.
///
/// - `synonym` (regular): every text is equivalent to every other.
/// - `onewaysynonym`: the `input` finds its `synonyms`, never the reverse.
/// - `altcorrection1`, `altcorrection2`: the `word` finds its `corrections`
///   (one way), a match counting as one or two typos (Algolia: "treated as
///   words with one or two typos", ranked below the word itself), never
///   exact.
/// - `placeholder`: stored and answered, not applied
///   (``QuerySynonym/init(json:)`` returns nil for it).
package struct QuerySynonym: Sendable, Hashable {
    /// The texts a query word is looked up in: every text of a regular
    /// synonym, the input of a one-way one.
    package var inputs: [[String]]
    /// Per input (by index), or for all when ``oneWay`` is false, the texts
    /// it finds.
    package var texts: [[String]]
    package var oneWay: Bool
    /// The typos a match of a text counts for: 0, or 1 and 2 for
    /// alternative corrections.
    package var typos: Int

    package init(inputs: [[String]], texts: [[String]], oneWay: Bool, typos: Int = 0) {
        self.inputs = inputs
        self.texts = texts
        self.oneWay = oneWay
        self.typos = typos
    }

    /// From an Algolia synonym object; nil for types that do not change
    /// matching here, or an object without texts.
    package init?(json o: [String: JSONValue]) {
        let words = { (s: String) in SearchTokens.queryWords(s) }
        let synonyms = (o["synonyms"]?.arrayValue ?? []).compactMap(\.stringValue).map(words).filter { !$0.isEmpty }
        switch o["type"]?.stringValue?.lowercased() {
        case "synonym":
            guard synonyms.count > 1 else { return nil }
            self.init(inputs: synonyms, texts: synonyms, oneWay: false)
        case "onewaysynonym":
            guard let input = o["input"]?.stringValue.map(words), !input.isEmpty, !synonyms.isEmpty else { return nil }
            self.init(inputs: [input], texts: synonyms, oneWay: true)
        case "altcorrection1", "altcorrection2":
            let corrections = (o["corrections"]?.arrayValue ?? []).compactMap(\.stringValue).map(words).filter { !$0.isEmpty }
            guard let word = o["word"]?.stringValue.map(words), !word.isEmpty, !corrections.isEmpty else { return nil }
            self.init(inputs: [word], texts: corrections, oneWay: true, typos: o["type"]?.stringValue?.lowercased() == "altcorrection1" ? 1 : 2)
        default:
            return nil
        }
    }
}

/// How a query's words become the plan's words and their alternatives: a
/// value type (query words, the index's synonyms, the language settings in;
/// words and ``WordAlternative``s out) that the coordinator applies before a
/// search is scattered, so that shards know nothing of synonyms or languages.
///
/// Readings (Algolia's documents, and where they leave room, what a user
/// expects):
/// - `removeStopWords` (English; `true` or a list holding `"en"`): English
///   stop words are dropped from the query ("what is a record" searches
///   "record"), except a word matched as a prefix (the last one while typing,
///   as Algolia documents), and except when every word is one: a query of
///   stop words alone ("the who") is searched as typed rather than matching
///   every record.
/// - `ignorePlurals` (English; `true` or a list holding `"en"`): a word also
///   matches its singular and plural forms ("car" and "cars", "child" and
///   "children", "mouse" and "mice"), by English rules and common irregular
///   forms (``EnglishInflection``).
/// - Synonyms: a query word matches the other texts of every regular
///   synonym holding it, and the `synonyms` of every one-way synonym whose
///   `input` it is; a text of several words as a phrase
///   (``WordAlternative/phrase``: its words adjacent, in order, in one
///   value), so "ny" of `["NY", "new york"]` finds "New York Times" and not
///   "new company in York" (Algolia: "the engine considers multi-word
///   synonyms as a phrase").
/// - Several words: where the query holds a synonym's text of several words
///   ("new york" of `["NY", "new york"]`), each of those words also matches
///   the synonym's other texts, so a record holding "NY" matches both words
///   at one place (proximity 1), and one holding "big apple" (of `["new
///   york", "big apple"]`) matches both at the phrase's place.
/// - Ranking: an alternative matches as the word itself with no typo, for
///   every criterion; for `exact` as `alternativesAsExact` says, by default
///   plurals and one-word synonyms but not texts of several words on either
///   side (Algolia's default: `ignorePlurals`, `singleWordSynonym`; its
///   `multiWordsSynonym` names "NY" = "New York"), so that a record holding
///   "trousers" ranks for "pants" as one holding "pants" does.
/// - Alternatives match whole words: the last word's prefix matching is the
///   word's own, not its synonyms'.
package struct QueryExpansion: Sendable, Hashable {
    package var removeStopWords = false
    package var ignorePlurals = false
    /// `alternativesAsExact` holds `ignorePlurals`.
    package var pluralsAsExact = true
    /// `alternativesAsExact` holds `singleWordSynonym`.
    package var synonymsAsExact = true
    /// `alternativesAsExact` holds `multiWordsSynonym`.
    package var multiWordSynonymsAsExact = false
    /// Whether the index's synonyms apply (the `synonyms` parameter).
    package var useSynonyms = true
    package var synonyms: [QuerySynonym] = []

    package init(
        removeStopWords: Bool = false, ignorePlurals: Bool = false, pluralsAsExact: Bool = true, synonymsAsExact: Bool = true,
        multiWordSynonymsAsExact: Bool = false, useSynonyms: Bool = true, synonyms: [QuerySynonym] = []
    ) {
        self.multiWordSynonymsAsExact = multiWordSynonymsAsExact
        self.removeStopWords = removeStopWords
        self.ignorePlurals = ignorePlurals
        self.pluralsAsExact = pluralsAsExact
        self.synonymsAsExact = synonymsAsExact
        self.useSynonyms = useSynonyms
        self.synonyms = synonyms
    }

    /// Whether the expansion can change a query at all (else it is skipped).
    package var isActive: Bool { removeStopWords || ignorePlurals || (useSynonyms && !synonyms.isEmpty) }

    /// The words a search looks for and, per word, its alternatives (empty
    /// when no word has any).
    package func expand(_ words: [String], prefixLast: Bool) -> (words: [String], alternatives: [[WordAlternative]]) {
        guard isActive, !words.isEmpty else { return (words, []) }
        var kept = words
        if removeStopWords {
            let last = words.count - 1
            let isStop = words.indices.map { !(prefixLast && $0 == last) && EnglishStopWords.contains(words[$0]) }
            if !words.indices.allSatisfy({ EnglishStopWords.contains(words[$0]) }) {
                kept = words.indices.filter { !isStop[$0] }.map { words[$0] }
            }
        }
        var alternatives: [[WordAlternative]] = []
        var any = false
        let spans = useSynonyms ? phraseAlternatives(kept, prefixLast: prefixLast) : []
        for (k, word) in kept.enumerated() {
            var list: [WordAlternative] = []
            func add(_ a: WordAlternative) {
                guard a.word != word, !a.word.isEmpty else { return }
                if let i = list.firstIndex(where: { $0.word == a.word }) {
                    // Found several ways: the best of them.
                    if a.typos < list[i].typos { list[i].typos = a.typos }
                    if a.exact { list[i].exact = true }
                } else {
                    list.append(a)
                }
            }
            if useSynonyms {
                for s in synonyms {
                    for (i, input) in s.inputs.enumerated() where input == [word] {
                        for (j, text) in s.texts.enumerated() where s.oneWay || j != i {
                            let exact = s.typos == 0 && (text.count == 1 ? synonymsAsExact : multiWordSynonymsAsExact)
                            add(WordAlternative(phrase: text, exact: exact, typos: s.typos))
                        }
                    }
                }
            }
            for (start, length, texts, typos) in spans where start <= k && k < start + length {
                for text in texts { add(WordAlternative(phrase: text, exact: typos == 0 && multiWordSynonymsAsExact, typos: typos)) }
            }
            if ignorePlurals {
                for form in EnglishInflection.forms(of: word) { add(WordAlternative(form, exact: pluralsAsExact)) }
            }
            any = any || !list.isEmpty
            alternatives.append(list)
        }
        return (kept, any ? alternatives : [])
    }

    /// Where the query holds a synonym's input of several words: the span
    /// (first word, length) and the texts it finds (one word or several;
    /// every word of the span gets each as an alternative, a text of
    /// several words as a phrase).
    ///
    /// While the last word is typed (`prefixLast`), an input that ends the
    /// query applies once its last word starts with the query's last word
    /// (Algolia: "the engine only matches the synonym when the last word
    /// starts to match … you may not want to retrieve results with "NY"
    /// when you type "ne". However, you do when you type "new yo"").
    func phraseAlternatives(_ words: [String], prefixLast: Bool = false) -> [(start: Int, length: Int, texts: [[String]], typos: Int)] {
        var out: [(start: Int, length: Int, texts: [[String]], typos: Int)] = []
        for s in synonyms {
            for (i, input) in s.inputs.enumerated() where input.count > 1 && input.count <= words.count {
                let texts = s.texts.enumerated().filter { j, text in (s.oneWay || j != i) && text != input }.map(\.element)
                guard !texts.isEmpty else { continue }
                for start in 0...(words.count - input.count) {
                    let end = start + input.count
                    let typed =
                        prefixLast && end == words.count
                        ? words[start..<(end - 1)].elementsEqual(input.dropLast()) && input[input.count - 1].hasPrefix(words[end - 1])
                        : words[start..<end].elementsEqual(input)
                    if typed { out.append((start, input.count, texts, s.typos)) }
                }
            }
        }
        return out
    }

    /// Whether a language setting (`ignorePlurals`, `removeStopWords`) turns
    /// the English feature on: `true`, `"true"`, or a list of languages
    /// holding `"en"`. Nil when the value is none of the forms Algolia takes.
    package static func english(_ v: JSONValue) -> Bool? {
        if let b = v.boolValue { return b }
        if let s = v.stringValue {
            if s == "true" || s == "false" { return s == "true" }
            return s.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "en" }
        }
        guard let list = v.arrayValue else { return nil }
        var languages: [String] = []
        for l in list {
            guard let s = l.stringValue else { return nil }
            languages.append(s)
        }
        return languages.contains("en")
    }
}

/// English singular and plural forms: regular rules and the common
/// irregular nouns. Both ways, since a query word may be either.
package enum EnglishInflection {
    /// Singular → plural for forms the rules miss.
    static let irregular: [String: [String]] = [
        "man": ["men"], "woman": ["women"], "child": ["children"], "person": ["people", "persons"], "mouse": ["mice"],
        "foot": ["feet"], "tooth": ["teeth"], "goose": ["geese"], "ox": ["oxen"], "louse": ["lice"], "die": ["dice"],
        "leaf": ["leaves"], "knife": ["knives"], "life": ["lives"], "wife": ["wives"], "half": ["halves"],
        "wolf": ["wolves"], "shelf": ["shelves"], "loaf": ["loaves"], "thief": ["thieves"], "calf": ["calves"],
        "elf": ["elves"], "self": ["selves"], "cactus": ["cacti", "cactuses"], "fungus": ["fungi"], "nucleus": ["nuclei"],
        "radius": ["radii"], "stimulus": ["stimuli"], "syllabus": ["syllabi"], "analysis": ["analyses"],
        "crisis": ["crises"], "thesis": ["theses"], "basis": ["bases"], "diagnosis": ["diagnoses"],
        "hypothesis": ["hypotheses"], "parenthesis": ["parentheses"], "phenomenon": ["phenomena"],
        "criterion": ["criteria"], "datum": ["data"], "medium": ["media"], "index": ["indices", "indexes"],
        "appendix": ["appendices", "appendixes"], "matrix": ["matrices"], "vertex": ["vertices"], "potato": ["potatoes"],
        "tomato": ["tomatoes"], "hero": ["heroes"], "echo": ["echoes"], "veto": ["vetoes"], "quiz": ["quizzes"],
        "sheep": ["sheep"], "fish": ["fish", "fishes"], "deer": ["deer"], "series": ["series"], "species": ["species"],
    ]
    /// Plural → singulars, the reverse of ``irregular``.
    static let irregularSingular: [String: [String]] = {
        var out: [String: [String]] = [:]
        for (singular, plurals) in irregular {
            for p in plurals where p != singular { out[p, default: []].append(singular) }
        }
        return out
    }()

    static func isVowel(_ c: Character) -> Bool { "aeiou".contains(c) }

    /// The regular plural of a singular noun.
    static func plural(_ w: String) -> String {
        if w.hasSuffix("s") || w.hasSuffix("x") || w.hasSuffix("z") || w.hasSuffix("ch") || w.hasSuffix("sh") { return w + "es" }
        if w.hasSuffix("y"), w.count > 1, !isVowel(w[w.index(w.endIndex, offsetBy: -2)]) { return String(w.dropLast()) + "ies" }
        return w + "s"
    }

    /// Words ending in `s` that are not plurals of a word without it.
    static let invariant: Set<String> = [
        "news", "physics", "mathematics", "economics", "always", "perhaps", "whereas", "its", "his", "hers", "ours",
        "yours", "theirs", "has", "was", "does", "goes", "yes", "less", "this", "thus", "plus", "gas", "lens", "bias",
        "chaos", "canvas", "atlas", "alias", "iris", "mumps", "corps", "means", "thanks",
    ]

    /// The regular singulars of a word that reads as a plural; none otherwise.
    static func singular(_ w: String) -> [String] {
        guard w.count > 3, w.hasSuffix("s"), !w.hasSuffix("ss"), !w.hasSuffix("us"), !w.hasSuffix("is"), !invariant.contains(w) else {
            return []
        }
        if w.hasSuffix("ies"), w.count > 4 { return [String(w.dropLast(3)) + "y"] }
        if w.hasSuffix("sses") { return [String(w.dropLast(2))] }
        for ending in ["ses", "xes", "zes", "ches", "shes"] where w.hasSuffix(ending) {
            // "boxes" is "box", "horses" "horse": the rules cannot tell which, so both.
            return [String(w.dropLast()), String(w.dropLast(2))]
        }
        return [String(w.dropLast())]
    }

    /// The other forms of `word` (folded, one token): its plurals and, when
    /// it reads as a plural, its singulars; irregular nouns by the table
    /// alone. Words of fewer than 3 letters (but irregular ones) and words
    /// with other characters than letters have none.
    package static func forms(of word: String) -> [String] {
        if let irregular = irregular[word] ?? irregularSingular[word] { return irregular.filter { $0 != word } }
        guard word.count >= 3, word.allSatisfy({ $0.isLetter }), !invariant.contains(word) else { return [] }
        let singulars = singular(word)
        return singulars.isEmpty ? [plural(word)] : singulars.filter { $0 != word }
    }
}

/// English stop words, as `removeStopWords` drops them: articles,
/// pronouns, auxiliaries, prepositions, conjunctions and the commonest
/// adverbs (Algolia's own list is not published; this one holds the words
/// its documents name: "the", "a", "an", "and", "what", "is", "that", "it").
package enum EnglishStopWords {
    static let words: Set<String> = [
        "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be",
        "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do",
        "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he",
        "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its",
        "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once",
        "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some",
        "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this",
        "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where",
        "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
        "yourselves",
    ]

    package static func contains(_ word: String) -> Bool { words.contains(word) }
}
