"""Hand-written lexicons for the generated movie-review sentiment suite.

Every list is a plain tuple of strings (no duplicates), so that sampling from it
with a seeded generator is deterministic.  Adjectives and verbs are chosen to be
natural with movie nouns ("The plot is gripping.", "I hated the ending.").
"""

from __future__ import annotations

# --------------------------------------------------------------------------- nouns
MOVIE_NOUNS = (
    "movie", "film", "plot", "acting", "script", "director", "cast", "soundtrack",
    "story", "ending", "dialogue", "cinematography", "performance", "screenplay",
    "sequel", "score", "villain", "lead actor", "premise", "pacing", "editing",
    "direction", "humor", "finale", "twist",
)

# Count nouns that read naturally after an adjective: "It is a wonderful film."
MOVIE_COUNT_NOUNS = (
    "movie", "film", "story", "script", "sequel", "performance", "ending",
    "soundtrack", "screenplay", "premise", "twist", "finale", "villain", "plot",
    "score", "cast", "documentary", "comedy", "thriller", "drama",
)

# ---------------------------------------------------------------------- adjectives
POSITIVE_ADJS = (
    "good", "great", "excellent", "amazing", "wonderful", "fantastic", "brilliant",
    "superb", "outstanding", "beautiful", "enjoyable", "delightful", "impressive",
    "terrific", "marvelous", "captivating", "engaging", "charming", "moving",
    "hilarious", "gripping", "masterful", "stunning", "clever", "exceptional",
    "fascinating", "entertaining", "memorable", "touching", "lovely", "remarkable",
    "exciting",
)

NEGATIVE_ADJS = (
    "bad", "terrible", "awful", "horrible", "boring", "dull", "weak", "poor",
    "dreadful", "lousy", "mediocre", "tedious", "disappointing", "annoying",
    "forgettable", "clumsy", "painful", "pointless", "ridiculous", "stupid",
    "unwatchable", "bland", "lifeless", "messy", "unbearable", "pathetic", "lame",
    "incoherent", "tiresome", "awkward", "atrocious", "frustrating",
)

NEUTRAL_ADJS = (
    "American", "British", "French", "Italian", "Japanese", "Korean", "Spanish",
    "German", "Indian", "international", "animated", "silent", "black-and-white",
    "independent", "foreign", "subtitled", "digital", "live-action", "recent",
    "English-language", "Canadian", "Mexican",
)

# -------------------------------------------------------------------------- verbs
# (base form, past form)
POSITIVE_VERBS = (
    ("love", "loved"), ("like", "liked"), ("enjoy", "enjoyed"), ("admire", "admired"),
    ("adore", "adored"), ("appreciate", "appreciated"), ("treasure", "treasured"),
    ("recommend", "recommended"), ("relish", "relished"), ("value", "valued"),
)

NEGATIVE_VERBS = (
    ("hate", "hated"), ("dislike", "disliked"), ("despise", "despised"),
    ("regret", "regretted"), ("loathe", "loathed"), ("detest", "detested"),
    ("resent", "resented"), ("abhor", "abhorred"),
)

NEUTRAL_VERBS = (
    ("see", "saw"), ("watch", "watched"), ("rent", "rented"), ("stream", "streamed"),
    ("review", "reviewed"), ("discuss", "discussed"), ("describe", "described"),
    ("analyze", "analyzed"), ("summarize", "summarized"),
)

# --------------------------------------------------------------------- modifiers
INTENSIFIERS = (
    "really", "very", "extremely", "incredibly", "truly", "absolutely",
    "exceptionally", "remarkably", "particularly", "so", "amazingly", "especially",
    "genuinely", "seriously", "unbelievably", "exceedingly", "tremendously",
    "utterly", "awfully", "most",
)

VERB_INTENSIFIERS = (
    "really", "truly", "absolutely", "totally", "thoroughly", "genuinely",
    "sincerely", "deeply", "completely", "honestly",
)

REDUCERS = (
    "somewhat", "kind of", "a little", "slightly", "sort of", "fairly", "mildly",
    "a bit", "moderately", "marginally", "partially", "reasonably", "rather",
    "probably", "a tad", "occasionally",
)

VERB_REDUCERS = (
    "somewhat", "kind of", "sort of", "partly", "mildly", "slightly", "moderately",
    "occasionally", "almost", "probably",
)

# ------------------------------------------------------------------------ phrases
POSITIVE_PHRASES = (
    "I loved it.", "Highly recommended.", "It was a joy to watch.", "What a great film!",
    "I would watch it again.", "A real masterpiece.", "Two thumbs up.", "Absolutely brilliant.",
    "I enjoyed every minute.", "Don't miss it.", "It's a must-see.", "Simply wonderful.",
    "I had a great time.", "One of the best films of the year.", "Pure fun.",
    "I can't wait to see it again.", "A wonderful experience.", "Five stars.",
    "I was delighted.", "Great job by everyone.",
)

NEGATIVE_PHRASES = (
    "I hated it.", "What a waste of time.", "Avoid it.", "It was terrible.",
    "I want my money back.", "A total disaster.", "Two thumbs down.", "Absolutely awful.",
    "I regretted every minute.", "Don't bother.", "Skip this one.", "Simply dreadful.",
    "I was bored to tears.", "One of the worst films of the year.", "Pure torture.",
    "I walked out.", "A miserable experience.", "Zero stars.", "I was so disappointed.",
    "Shame on everyone involved.",
)

# -------------------------------------------------------------------------- people
# Names that double as common English words (Will, Hope, Grace, Frank...) are left out.
MALE_FIRST_NAMES = (
    "John", "Michael", "David", "James", "Robert", "Daniel", "Thomas", "Andrew",
    "Samuel", "Carlos", "Juan", "Luis", "Diego", "Mohammed", "Ahmed", "Omar",
    "Hassan", "Hiroshi", "Kenji", "Wei", "Raj", "Arjun", "Vikram", "Kwame",
    "Kofi", "Chinedu", "Jamal", "Ivan", "Dmitri", "Pierre", "Luca", "Matteo",
    "Tom", "Peter", "Steven", "Kevin",
)

FEMALE_FIRST_NAMES = (
    "Mary", "Sarah", "Emily", "Jessica", "Emma", "Olivia", "Sophia", "Maria",
    "Ana", "Sofia", "Fatima", "Aisha", "Leila", "Yuki", "Mei", "Priya",
    "Ananya", "Amara", "Ngozi", "Zainab", "Olga", "Natasha", "Chloe", "Camille",
    "Giulia", "Lucia", "Keisha", "Hannah", "Rachel", "Laura", "Elena", "Ingrid",
    "Julia", "Susan", "Nicole", "Karen",
)

FIRST_NAMES = MALE_FIRST_NAMES + FEMALE_FIRST_NAMES

LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Garcia", "Martinez", "Rodriguez",
    "Nguyen", "Kim", "Chen", "Wang", "Patel", "Singh", "Khan", "Okafor", "Mensah",
    "Ivanov", "Kowalski", "Mueller", "Rossi", "Dubois", "Tanaka", "Sato", "Cohen",
    "Haddad", "Hernandez", "Lopez", "Silva", "Santos", "Andersson", "Murphy",
    "Taylor", "Anderson", "Thompson", "Walker", "Okonkwo", "Yamamoto", "Moreau",
)

ROLES = (
    "actor", "director", "filmmaker", "screenwriter", "producer", "critic",
    "comedian", "composer", "cinematographer", "star", "editor", "novelist",
)

# ----------------------------------------------------------------------- places
# Cities/countries that are also common film titles or person names
# (Chicago, Casablanca, Phoenix, Sydney, Jordan, Georgia...) are left out.
CITIES = (
    "New York", "Los Angeles", "San Francisco", "Boston", "Seattle", "Toronto",
    "Vancouver", "Mexico City", "London", "Paris", "Berlin", "Madrid", "Rome",
    "Tokyo", "Seoul", "Beijing", "Shanghai", "Mumbai", "Delhi", "Cairo", "Lagos",
    "Nairobi", "Melbourne", "Dublin", "Amsterdam", "Stockholm", "Moscow",
    "Istanbul", "Buenos Aires", "Rio de Janeiro", "Bangkok", "Hong Kong",
    "Singapore", "Manila", "Jakarta", "Johannesburg", "Prague", "Vienna",
    "Budapest", "Warsaw", "Lisbon", "Barcelona", "Athens", "Montreal", "Miami",
    "Denver", "New Orleans", "Las Vegas",
)

COUNTRIES = (
    "United States", "Canada", "Mexico", "Brazil", "Argentina", "Chile", "Peru",
    "Colombia", "England", "Ireland", "Scotland", "France", "Germany", "Spain",
    "Italy", "Portugal", "Netherlands", "Sweden", "Norway", "Denmark", "Poland",
    "Russia", "Ukraine", "Greece", "Egypt", "Nigeria", "Kenya", "Ethiopia",
    "South Africa", "Morocco", "Iran", "Iraq", "Israel", "India", "Pakistan",
    "China", "Japan", "South Korea", "Vietnam", "Thailand", "Indonesia",
    "Philippines", "Australia", "New Zealand", "Cuba", "Jamaica",
)

# ------------------------------------------------------------ protected attributes
RACES = (
    "black", "white", "Asian", "Hispanic", "Latino", "Arab", "Native American",
    "Middle Eastern", "South Asian", "East Asian", "Pacific Islander", "multiracial",
)

NATIONALITIES = (
    "American", "British", "Chinese", "Indian", "Mexican", "Nigerian", "French",
    "German", "Japanese", "Korean", "Brazilian", "Russian", "Iranian", "Egyptian",
    "Italian", "Spanish", "Canadian", "Australian", "Pakistani", "Vietnamese",
    "Filipino", "Indonesian", "Polish", "Swedish", "Irish", "Kenyan", "Ethiopian",
    "Argentinian", "Israeli", "Palestinian", "Greek", "Turkish",
)

RELIGIONS = (
    "Christian", "Muslim", "Jewish", "Hindu", "Buddhist", "Sikh", "Catholic",
    "Protestant", "Mormon", "atheist", "agnostic", "Jain", "Taoist", "Orthodox",
    "Evangelical", "Baha'i",
)

# ------------------------------------------------------------------ contractions
# (expanded, contracted).  Ambiguous contractions ("I'd" = I would / I had) are left out.
CONTRACTIONS = (
    ("is not", "isn't"), ("are not", "aren't"), ("was not", "wasn't"),
    ("were not", "weren't"), ("do not", "don't"), ("does not", "doesn't"),
    ("did not", "didn't"), ("cannot", "can't"), ("could not", "couldn't"),
    ("would not", "wouldn't"), ("should not", "shouldn't"), ("will not", "won't"),
    ("has not", "hasn't"), ("have not", "haven't"), ("had not", "hadn't"),
    ("must not", "mustn't"), ("it is", "it's"), ("that is", "that's"),
    ("what is", "what's"), ("there is", "there's"), ("here is", "here's"),
    ("who is", "who's"), ("he is", "he's"), ("she is", "she's"), ("I am", "I'm"),
    ("you are", "you're"), ("we are", "we're"), ("they are", "they're"),
    ("I have", "I've"), ("you have", "you've"), ("we have", "we've"),
    ("they have", "they've"), ("I will", "I'll"), ("you will", "you'll"),
    ("we will", "we'll"), ("they will", "they'll"), ("it will", "it'll"),
    ("let us", "let's"),
)

# ---------------------------------------------------------------- neutral words
NEUTRAL_WORDS = (
    "movie", "film", "theater", "screen", "ticket", "popcorn", "scene", "actor",
    "director", "camera", "trailer", "sequel", "studio", "audience", "seat",
    "minute", "hour", "character", "watch", "see", "American", "international",
    "chapter", "episode", "release", "premiere", "credits", "genre",
)

# Non-sentiment framing of statements for the temporal "used to" test.
USED_TO_FRAMES = (
    "I used to think", "I used to believe", "I used to feel", "I once thought",
    "There was a time when I thought",
)

OPINION_HOLDERS = ("Some people", "Critics", "My friends", "Many viewers", "Other reviewers")

# ----------------------------------------------------------------------- synonyms
# Groups of words interchangeable in most contexts (same part of speech, same form:
# "loved"/"adored" but not "love"/"adore", since "love" is also a noun: "a love story").
# Words that are ambiguous in everyday text are left out: "like" (a preposition),
# "little" ("a little boring"), "moving" ("a moving car"), "right", "kind", "well",
# "hard", "light", "show", "watch", "end", "start" (nouns as well as verbs), "big" ("a big fan"),
# "fine" (weaker than "good": "it was fine"), "strong" ("a strong password"), "movies" ("go to the movies").
# No word is in two groups.  Used by the ``synonyms`` perturbation.
SYNONYMS = (
    # adjectives: praise
    ("good", "nice"),
    ("great", "wonderful", "terrific", "fantastic"),
    ("excellent", "outstanding", "superb", "exceptional"),
    ("amazing", "astonishing", "astounding"),
    ("magnificent", "splendid"),
    ("beautiful", "lovely", "gorgeous"),
    ("interesting", "intriguing"),
    ("fascinating", "captivating"),
    ("exciting", "thrilling"),
    ("gripping", "riveting", "compelling"),
    ("funny", "amusing"),
    ("hilarious", "uproarious"),
    ("enjoyable", "pleasurable"),
    ("memorable", "unforgettable"),
    ("touching", "poignant"),
    ("impressive", "remarkable"),
    ("smart", "clever", "intelligent"),
    ("famous", "renowned"),
    # adjectives: criticism
    ("terrible", "awful", "horrible", "dreadful"),
    ("boring", "dull", "tedious"),
    ("stupid", "dumb", "idiotic"),
    ("ridiculous", "absurd", "ludicrous"),
    ("annoying", "irritating"),
    ("disappointing", "underwhelming"),
    ("confusing", "bewildering"),
    ("pointless", "meaningless"),
    ("mediocre", "unremarkable"),
    # adjectives: neutral
    ("huge", "enormous", "massive"),
    ("entire", "whole"),
    ("strange", "weird", "peculiar"),
    ("scary", "frightening"),
    ("quick", "rapid", "swift"),
    ("difficult", "challenging"),
    ("important", "significant"),
    # adverbs
    ("completely", "totally", "entirely"),
    ("quickly", "rapidly", "swiftly"),
    ("maybe", "perhaps"),
    ("often", "frequently"),
    ("almost", "nearly"),
    ("certainly", "definitely"),
    ("honestly", "frankly"),
    ("immediately", "instantly"),
    ("sometimes", "occasionally"),
    ("usually", "generally", "typically"),
    # nouns
    ("movie", "film"),
    ("actor", "performer"),
    ("actors", "performers"),
    ("plot", "storyline"),
    ("script", "screenplay"),
    ("mistake", "error"),
    ("mistakes", "errors"),
    ("problem", "issue"),
    ("problems", "issues"),
    ("child", "kid"),
    ("children", "kids"),
    ("money", "cash"),
    ("trip", "journey"),
    ("photo", "photograph"),
    ("doctor", "physician"),
    ("lawyer", "attorney"),
    ("talent", "skill"),
    # verbs (one form per group)
    ("loved", "adored"),
    ("enjoyed", "relished"),
    ("hate", "detest", "loathe"),
    ("hated", "detested", "loathed"),
    ("begins", "starts"),
    ("buy", "purchase"),
    ("bought", "purchased"),
    ("helped", "assisted"),
    ("tried", "attempted"),
    ("understand", "comprehend"),
    ("watched", "viewed"),
    ("shout", "yell"),
    ("shouted", "yelled"),
    ("choose", "select"),
    ("destroy", "ruin"),
    ("destroyed", "ruined"),
    ("seems", "appears"),
)

# ----------------------------------------------------------------------- antonyms
# (word, antonym) pairs, used in both directions by the ``antonyms`` perturbation.
# Same part of speech and form on both sides; ambiguous words are left out as for
# SYNONYMS ("like", "kind", "right", "light", "hard", "old", "lost", "poor", "win").
ANTONYMS = (
    # adjectives
    ("good", "bad"),
    ("better", "worse"),
    ("best", "worst"),
    ("great", "terrible"),
    ("excellent", "awful"),
    ("wonderful", "horrible"),
    ("amazing", "dreadful"),
    ("interesting", "boring"),
    ("exciting", "dull"),
    ("beautiful", "ugly"),
    ("happy", "sad"),
    ("funny", "unfunny"),
    ("positive", "negative"),
    ("memorable", "forgettable"),
    ("predictable", "unpredictable"),
    ("realistic", "unrealistic"),
    ("likable", "unlikable"),
    ("satisfying", "unsatisfying"),
    ("successful", "unsuccessful"),
    ("necessary", "unnecessary"),
    ("pleasant", "unpleasant"),
    ("comfortable", "uncomfortable"),
    ("friendly", "unfriendly"),
    ("lucky", "unlucky"),
    ("fair", "unfair"),
    ("possible", "impossible"),
    ("honest", "dishonest"),
    ("pleased", "displeased"),
    ("satisfied", "dissatisfied"),
    ("mature", "immature"),
    ("smart", "stupid"),
    ("clever", "dumb"),
    ("wise", "foolish"),
    ("brave", "cowardly"),
    ("polite", "rude"),
    ("easy", "difficult"),
    ("simple", "complex"),
    ("cheap", "expensive"),
    ("strong", "weak"),
    ("fast", "slow"),
    ("early", "late"),
    ("high", "low"),
    ("long", "short"),
    ("big", "small"),
    ("hot", "cold"),
    ("safe", "dangerous"),
    ("true", "false"),
    ("correct", "incorrect"),
    ("alive", "dead"),
    ("full", "empty"),
    ("quiet", "loud"),
    ("dark", "bright"),
    ("deep", "shallow"),
    ("thick", "thin"),
    ("wide", "narrow"),
    ("clean", "dirty"),
    # verbs (one form per pair)
    ("love", "hate"),
    ("loved", "hated"),
    ("loves", "hates"),
    ("liked", "disliked"),
    ("likes", "dislikes"),
    ("agree", "disagree"),
    ("agreed", "disagreed"),
    ("accept", "reject"),
    ("accepted", "rejected"),
    ("succeed", "fail"),
    ("succeeded", "failed"),
    ("remember", "forget"),
    ("include", "exclude"),
    ("included", "excluded"),
    ("increase", "decrease"),
    ("praised", "criticized"),
    ("buy", "sell"),
    ("bought", "sold"),
    ("laugh", "cry"),
    ("laughed", "cried"),
    # nouns
    ("winner", "loser"),
    ("success", "failure"),
    ("strength", "weakness"),
    ("friend", "enemy"),
    ("hero", "villain"),
    ("maximum", "minimum"),
    ("entrance", "exit"),
    ("top", "bottom"),
    # adverbs, quantifiers, prepositions
    ("always", "never"),
    ("often", "rarely"),
    ("everything", "nothing"),
    ("everyone", "nobody"),
    ("more", "less"),
    ("many", "few"),
    ("before", "after"),
    ("above", "below"),
    ("inside", "outside"),
)

# ------------------------------------------------------------ lexicons by name
# The lists a perturbation parameter (or a suite spec) may name: ``"positive_phrases"``
# (or ``"POSITIVE_PHRASES"``) stands for POSITIVE_PHRASES.  LEXICONS holds the plain
# word lists; WORD_GROUPS the lists of tuples (pairs, synonym groups).
LEXICONS = {
    "movie_nouns": MOVIE_NOUNS,
    "movie_count_nouns": MOVIE_COUNT_NOUNS,
    "positive_adjs": POSITIVE_ADJS,
    "negative_adjs": NEGATIVE_ADJS,
    "neutral_adjs": NEUTRAL_ADJS,
    "intensifiers": INTENSIFIERS,
    "verb_intensifiers": VERB_INTENSIFIERS,
    "reducers": REDUCERS,
    "verb_reducers": VERB_REDUCERS,
    "positive_phrases": POSITIVE_PHRASES,
    "negative_phrases": NEGATIVE_PHRASES,
    "male_first_names": MALE_FIRST_NAMES,
    "female_first_names": FEMALE_FIRST_NAMES,
    "first_names": FIRST_NAMES,
    "last_names": LAST_NAMES,
    "roles": ROLES,
    "cities": CITIES,
    "countries": COUNTRIES,
    "races": RACES,
    "nationalities": NATIONALITIES,
    "religions": RELIGIONS,
    "neutral_words": NEUTRAL_WORDS,
    "used_to_frames": USED_TO_FRAMES,
    "opinion_holders": OPINION_HOLDERS,
}

WORD_GROUPS = {
    "positive_verbs": POSITIVE_VERBS,
    "negative_verbs": NEGATIVE_VERBS,
    "neutral_verbs": NEUTRAL_VERBS,
    "contractions": CONTRACTIONS,
    "synonyms": SYNONYMS,
    "antonyms": ANTONYMS,
}
